use super::*;
use p256::ecdsa::signature::hazmat::PrehashSigner as _;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::SigningKey;

const DIGEST: &str = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn key(seed: u8) -> SigningKey {
    SigningKey::from_slice(&[seed; 32]).unwrap()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn statement(digest: &str, predicate_type: &str) -> Vec<u8> {
    let hex = digest.strip_prefix("sha256:").unwrap();
    serde_json::to_vec(&serde_json::json!({
        "_type": STATEMENT_TYPE,
        "subject": [{"digest": {"sha256": hex}}],
        "predicateType": predicate_type,
    }))
    .unwrap()
}

/// A bundle as cosign writes one for an image: a DSSE envelope around an in-toto statement.
fn dsse_bundle(signer: &SigningKey, payload: &[u8], payload_type: &str) -> Vec<u8> {
    let signature: EcdsaSignature = signer.sign(&pae(payload_type, payload));
    serde_json::to_vec(&serde_json::json!({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {"publicKey": {"hint": "aGludA=="}, "tlogEntries": []},
        "dsseEnvelope": {
            "payload": b64(payload),
            "payloadType": payload_type,
            "signatures": [{"sig": b64(signature.to_der().as_bytes()), "keyid": ""}],
        },
    }))
    .unwrap()
}

#[test]
fn pae_is_dsse_v1() {
    assert_eq!(
        pae("application/vnd.in-toto+json", b"{}"),
        b"DSSEv1 28 application/vnd.in-toto+json 2 {}".to_vec()
    );
}

#[test]
fn a_dsse_bundle_verifies_only_for_its_key_digest_and_predicate() {
    let signer = key(7);
    let public = VerifyingKey::from(&signer);
    let good = dsse_bundle(
        &signer,
        &statement(DIGEST, SIGN_PREDICATE_TYPE),
        INTOTO_PAYLOAD_TYPE,
    );
    verify(&public, &good, DIGEST).unwrap();

    let other_digest = DIGEST.replace('b', "c");
    let err = verify(&public, &good, &other_digest).unwrap_err();
    assert!(matches!(err, BundleError::OtherDigest { .. }), "{err}");

    let other_key = VerifyingKey::from(&key(9));
    let err = verify(&other_key, &good, DIGEST).unwrap_err();
    assert!(matches!(err, BundleError::WrongKey), "{err}");

    let attestation = dsse_bundle(
        &signer,
        &statement(DIGEST, "https://slsa.dev/provenance/v1"),
        INTOTO_PAYLOAD_TYPE,
    );
    let err = verify(&public, &attestation, DIGEST).unwrap_err();
    assert!(err.to_string().contains("attestation"), "{err}");

    // The payload altered after signing: the signature no longer covers it.
    let mut altered: serde_json::Value = serde_json::from_slice(&good).unwrap();
    altered["dsseEnvelope"]["payload"] = b64(&statement(&other_digest, SIGN_PREDICATE_TYPE)).into();
    let err = verify(&public, &serde_json::to_vec(&altered).unwrap(), DIGEST).unwrap_err();
    assert!(matches!(err, BundleError::WrongKey), "{err}");

    let err = verify(&public, b"{\"mediaType\": 3}", DIGEST).unwrap_err();
    assert!(matches!(err, BundleError::Malformed(_)), "{err}");
    let empty = br#"{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}"#;
    assert!(matches!(
        verify(&public, empty, DIGEST),
        Err(BundleError::Empty)
    ));
}

#[test]
fn a_message_signature_bundle_signs_the_manifest_bytes() {
    let signer = key(7);
    let public = VerifyingKey::from(&signer);
    let hex = DIGEST.strip_prefix("sha256:").unwrap();
    let prehash: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let signature: EcdsaSignature = signer.sign_prehash(&prehash).unwrap();
    let bundle = serde_json::to_vec(&serde_json::json!({
        "mediaType": "application/vnd.dev.sigstore.bundle+json;version=0.2",
        "messageSignature": {
            "messageDigest": {"algorithm": "SHA2_256", "digest": b64(&prehash)},
            "signature": b64(signature.to_der().as_bytes()),
        },
    }))
    .unwrap();
    verify(&public, &bundle, DIGEST).unwrap();
    let err = verify(&public, &bundle, &DIGEST.replace('b', "d")).unwrap_err();
    assert!(matches!(err, BundleError::WrongKey), "{err}");
}
