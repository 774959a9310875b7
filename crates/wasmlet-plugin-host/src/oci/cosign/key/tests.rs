use super::*;
use p256::pkcs8::{EncodePrivateKey, LineEnding};

/// An encrypted key file in cosign's format, sealed here with scrypt at cosign's legacy
/// strength (the cheapest it writes) and a fixed salt and nonce.
fn encrypted_pem(key: &SigningKey, password: &[u8], label: &str) -> String {
    let der = key.to_pkcs8_der().unwrap();
    let salt = [3u8; 32];
    let nonce = [5u8; 24];
    let params = scrypt::Params::new(15, 8, 1, 32).unwrap();
    let mut box_key = [0u8; 32];
    scrypt::scrypt(password, &salt, &params, &mut box_key).unwrap();
    let sealed = XSalsa20Poly1305::new(&box_key.into())
        .encrypt(nonce.as_slice().into(), der.as_bytes())
        .unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let body = serde_json::to_vec(&serde_json::json!({
        "kdf": {"name": "scrypt", "params": {"N": 32768, "r": 8, "p": 1}, "salt": b64.encode(salt)},
        "cipher": {"name": "nacl/secretbox", "nonce": b64.encode(nonce)},
        "ciphertext": b64.encode(sealed),
    }))
    .unwrap();
    pem::encode_string(label, pem::LineEnding::LF, &body).unwrap()
}

fn key() -> SigningKey {
    SigningKey::from_slice(&[7u8; 32]).unwrap()
}

#[test]
fn an_encrypted_key_opens_with_its_password_only() {
    for label in ENCRYPTED_KEY_LABELS {
        let pem_text = encrypted_pem(&key(), b"hunter2", label);
        let opened = signing_key(&pem_text, &Password::new("hunter2")).unwrap();
        assert_eq!(opened, key());
        let err = signing_key(&pem_text, &Password::new("wrong")).unwrap_err();
        assert!(
            matches!(err, KeyError::WrongPassword { password_set: true }),
            "{err}"
        );
        assert!(err.to_string().contains("COSIGN_PASSWORD"), "{err}");
        let err = signing_key(&pem_text, &Password::default()).unwrap_err();
        assert!(err.to_string().contains("not set"), "{err}");
    }
}

#[test]
fn the_empty_password_is_a_password() {
    let pem_text = encrypted_pem(&key(), b"", ENCRYPTED_KEY_LABELS[0]);
    assert_eq!(signing_key(&pem_text, &Password::default()).unwrap(), key());
    assert_eq!(signing_key(&pem_text, &Password::new("")).unwrap(), key());
}

#[test]
fn plain_pkcs8_and_sec1_keys_still_read() {
    let pkcs8 = key().to_pkcs8_pem(LineEnding::LF).unwrap();
    assert_eq!(signing_key(&pkcs8, &Password::default()).unwrap(), key());
    let sec1 = p256::SecretKey::from(&key())
        .to_sec1_pem(LineEnding::LF)
        .unwrap();
    assert_eq!(signing_key(&sec1, &Password::default()).unwrap(), key());
}

#[test]
fn other_files_are_refused_with_a_reason() {
    let none = Password::default();
    assert!(matches!(
        signing_key("not a key", &none),
        Err(KeyError::NotPem(_))
    ));
    let public = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n";
    assert!(matches!(
        signing_key(public, &none),
        Err(KeyError::UnsupportedLabel { .. })
    ));
    // scrypt parameters cosign never writes (here a gigabyte of memory) are refused unread.
    let b64 = base64::engine::general_purpose::STANDARD;
    let body = serde_json::to_vec(&serde_json::json!({
        "kdf": {"name": "scrypt", "params": {"N": 1u64 << 30, "r": 8, "p": 1}, "salt": ""},
        "cipher": {"name": "nacl/secretbox", "nonce": b64.encode([0u8; 24])},
        "ciphertext": "",
    }))
    .unwrap();
    let crafted = pem::encode_string(ENCRYPTED_KEY_LABELS[0], pem::LineEnding::LF, &body).unwrap();
    let err = signing_key(&crafted, &none).unwrap_err();
    assert!(matches!(err, KeyError::Unsupported { .. }), "{err}");
}

/// A key pair `cosign generate-key-pair` (v2.6.5) wrote, with the password `wasmlet-test`.
const COSIGN_KEY: &str = include_str!("testdata-cosign.key");
const COSIGN_PUB: &str = include_str!("testdata-cosign.pub");

#[test]
fn a_key_cosign_generated_opens_and_matches_its_public_key() {
    use p256::pkcs8::DecodePublicKey;
    let opened = signing_key(COSIGN_KEY, &Password::new("wasmlet-test")).unwrap();
    let public = p256::ecdsa::VerifyingKey::from_public_key_pem(COSIGN_PUB).unwrap();
    assert_eq!(p256::ecdsa::VerifyingKey::from(&opened), public);
    let err = signing_key(COSIGN_KEY, &Password::new("wasmlet")).unwrap_err();
    assert!(matches!(err, KeyError::WrongPassword { .. }), "{err}");
}
