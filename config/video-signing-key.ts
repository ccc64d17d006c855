import { createPrivateKey, type JsonWebKey, type KeyObject } from 'node:crypto';

/**
 * The video provider's playback signing key as operators hand it over. Providers of signed playback (Mux, for one)
 * return the private key once, as a base64-encoded PEM; operators also paste PEMs (PKCS#1 or PKCS#8, with real or
 * `\n`-escaped line breaks) or export a JWK. All of them are accepted here, so the configuration check and the signer
 * read the value the same way.
 */
export function decodeRsaPrivateKey(configured: string): KeyObject {
  const text = configured.trim();
  let key: KeyObject;
  if (text.startsWith('{')) {
    key = createPrivateKey({ key: JSON.parse(text) as JsonWebKey, format: 'jwk' });
  } else {
    const pem = text.includes('-----BEGIN') ? text : Buffer.from(text, 'base64').toString('utf8');
    key = createPrivateKey({ key: pem.replaceAll('\\n', '\n'), format: 'pem' });
  }
  if (key.asymmetricKeyType !== 'rsa') {
    throw new Error(`the signing key is ${key.asymmetricKeyType ?? 'not asymmetric'}; RS256 needs an RSA key`);
  }
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < 2048) throw new Error(`the RSA signing key has ${bits} bits; RS256 needs at least 2048`);
  return key;
}

/** True when `configured` decodes to an RSA private key of at least 2048 bits. */
export function isRsaPrivateKey(configured: string): boolean {
  try {
    decodeRsaPrivateKey(configured);
    return true;
  } catch {
    return false;
  }
}
