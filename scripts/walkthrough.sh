#!/usr/bin/env bash
# A full purchase against the stack of `npm run dev`, as README.md walks through it (PSE settled by the sandbox bank).
set -e
API=http://127.0.0.1:3000/api/v1
SANDBOX=http://127.0.0.1:4010
json() { node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{const v=JSON.parse(s);console.log($1)})"; }
DATE=$(json 'v.demoEvent.eventDateId' < .dev/demo.json)
TYPE=$(json 'v.demoEvent.ticketTypeId' < .dev/demo.json)
EMAIL=ana.$RANDOM@example.com

# 1. The buyer asks for a sign-in code; the sandbox inbox receives it.
curl -s -X POST $API/customer/auth/request -H 'content-type: application/json' -d "{\"email\":\"$EMAIL\"}"; echo
sleep 1
CODE=$(curl -s "$SANDBOX/control/mail?to=$EMAIL" | json 'v.data[0].subject.match(/\d{6}/)[0]')
SESSION=$(curl -s -X POST $API/customer/auth/verify -H 'content-type: application/json' \
  -d "{\"email\":\"$EMAIL\",\"code\":\"$CODE\"}" | json 'v.data.session_token')
echo "session: ${SESSION:0:12}…"

# 2. Reserve two tickets: a PENDING sale with its expiry.
ORDER=$(curl -s -X POST $API/customer/orders -H "x-customer-session: $SESSION" -H 'content-type: application/json' -d "{
  \"eventDateId\":\"$DATE\",\"items\":[{\"ticketTypeId\":\"$TYPE\",\"quantity\":2}],
  \"buyer\":{\"name\":\"Ana Gómez\",\"phone\":\"+573001234567\",\"idType\":\"CC\",\"idNumber\":\"1020304050\"},
  \"returnUrl\":\"http://localhost:5173/gracias\"}")
echo "$ORDER"
SALE=$(echo "$ORDER" | json 'v.data.saleId'); REF=$(echo "$ORDER" | json 'v.data.reference')

# 3. Open payment and start a PSE transfer: open redirectUrl in a browser, pick a bank and press Pay.
curl -s -X POST $API/customer/orders/$SALE/payment -H "x-customer-session: $SESSION"; echo
PSE=$(curl -s -X POST $API/customer/orders/$SALE/payment/pse -H "x-customer-session: $SESSION")
echo "$PSE"
URL=$(echo "$PSE" | json 'v.data.redirectUrl')
# (what the browser does at the bank page)
curl -s -o /dev/null -w "bank page → %{http_code} %{redirect_url}\n" -X POST "$URL" \
  -d bank=1007 -d entity_type=individual -d email=$EMAIL -d decision=confirm

# 4. The bank settles; the gateway's signed notification confirms the sale.
curl -s -X POST $SANDBOX/control/gateway-a/pse/settle -H 'content-type: application/json' \
  -d "{\"reference\":\"$REF\",\"outcome\":\"approved\"}" > /dev/null
sleep 2
curl -s $API/customer/orders/$SALE -H "x-customer-session: $SESSION" | json '({status:v.data.status, tickets:v.data.tickets.length})'
curl -s "$SANDBOX/control/mail?to=$EMAIL" | json 'v.data.map(m=>m.subject)'
