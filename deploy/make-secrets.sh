#!/bin/sh
# Writes the secrets docker-compose.yml's production profile reads (deploy/secrets/<name>, mounted at
# /run/secrets/<name>): random values for the ones this deployment owns, and empty files to fill in for the ones the
# providers issue. Never overwrites a file that exists: rotating a key is a deliberate step (docs/deployment.md).
set -eu
cd "$(dirname "$0")"
mkdir -p secrets
# The directory keeps them private on the host. The files themselves must be readable by the containers' users
# (compose mounts them as they are, without the uid/mode options of swarm secrets).
chmod 700 secrets
umask 022

random() { openssl rand -hex "$1"; }
generate() {
  if [ -s "secrets/$1" ]; then echo "kept      secrets/$1"; return; fi
  printf '%s\n' "$2" > "secrets/$1"
  echo "generated secrets/$1"
}
fill_in() {
  if [ -e "secrets/$1" ]; then echo "kept      secrets/$1"; return; fi
  : > "secrets/$1"
  echo "FILL IN   secrets/$1 ($2)"
}

generate postgres_password "$(random 24)"
generate temporal_postgres_password "$(random 24)"
generate redis_password "$(random 24)"
generate secrets_encryption_key "$(random 32)"
generate payload_codec_keys "prod-1:$(openssl rand -base64 32)"
generate codec_operator_token "$(random 32)"
generate metrics_token "$(random 32)"
generate grafana_admin_password "$(random 16)"
fill_in gateway_a_access_token "gateway A's production access token"
fill_in gateway_a_webhook_secret "gateway A's webhook signing secret"
fill_in gateway_b_api_key "gateway B's identity (API) key"
fill_in gateway_b_secret_key "gateway B's integrity secret"
fill_in seatmap_secret_key "the seat map provider's secret key"
fill_in video_signing_private_key "the video provider's playback signing key (PEM)"
fill_in smtp_password "the mail relay's password for SMTP_USER; leave empty without a login"
[ -e production.env ] || { cp production.env.example production.env && echo "FILL IN   deploy/production.env"; }
