//! Sigstore bundles, the layout `cosign sign --new-bundle-format` writes (and cosign v3 writes
//! by default): one JSON bundle as the layer of an OCI 1.1 artifact whose `subject` is the
//! signed manifest, found through the referrers API or its fallback tag `sha256-<hex>`.
//!
//! For an image cosign puts a DSSE envelope in the bundle: its payload an in-toto statement
//! whose subject is the manifest digest and whose predicate type is cosign's signature
//! predicate, its signature over the DSSE pre-authentication encoding of payload type and
//! payload. A bundle may instead carry a message signature (what `cosign sign-blob` makes):
//! the signature of the manifest bytes, checked here against the manifest digest itself.
//! Only the signature is checked against the configured public key; the bundle's own
//! verification material (key hint, certificate, transparency log entries) is not trusted.

use base64::Engine as _;
use p256::ecdsa::signature::hazmat::PrehashVerifier as _;
use p256::ecdsa::signature::Verifier as _;
use p256::ecdsa::{Signature as EcdsaSignature, VerifyingKey};
use serde::Deserialize;
use std::collections::BTreeMap;

/// What the media type of a bundle layer (and of its artifact) starts with, for every bundle
/// version (`application/vnd.dev.sigstore.bundle.v0.3+json`, `...bundle+json;version=0.1`).
pub const BUNDLE_MEDIA_TYPE_PREFIX: &str = "application/vnd.dev.sigstore.bundle";
/// The DSSE payload type of an in-toto statement.
pub const INTOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// The in-toto statement type cosign writes.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The predicate type of cosign's image signatures (other predicates are attestations).
pub const SIGN_PREDICATE_TYPE: &str = "https://sigstore.dev/cosign/sign/v1";

/// Why one bundle does not sign the manifest.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// Not a Sigstore bundle.
    #[error("not a Sigstore bundle: {0}")]
    Malformed(String),
    /// A bundle with neither a DSSE envelope nor a message signature.
    #[error("a bundle with neither a DSSE envelope nor a message signature")]
    Empty,
    /// The envelope's payload is not an in-toto statement.
    #[error("a DSSE envelope of payload type {0:?}, not an in-toto statement")]
    PayloadType(String),
    /// A base64 field that is not base64.
    #[error("{0} is not base64")]
    Base64(&'static str),
    /// No signature made by the configured key.
    #[error("not signed by the configured key")]
    WrongKey,
    /// Signed, but the statement is not cosign's signature of this manifest.
    #[error("signed, but {0}")]
    Statement(String),
    /// Signed, but for other bytes than the manifest.
    #[error("signed, but for the digest {found}, not {digest}")]
    OtherDigest {
        /// The digest the bundle names.
        found: String,
        /// The manifest's.
        digest: String,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Bundle {
    media_type: String,
    dsse_envelope: Option<Envelope>,
    message_signature: Option<MessageSignature>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    payload: String,
    payload_type: String,
    #[serde(default)]
    signatures: Vec<EnvelopeSignature>,
}

#[derive(Deserialize)]
struct EnvelopeSignature {
    sig: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageSignature {
    message_digest: Option<HashOutput>,
    signature: String,
}

#[derive(Deserialize)]
struct HashOutput {
    algorithm: String,
    digest: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Statement {
    #[serde(rename = "_type")]
    kind: String,
    #[serde(default)]
    subject: Vec<Subject>,
    predicate_type: String,
}

#[derive(Deserialize)]
struct Subject {
    #[serde(default)]
    digest: BTreeMap<String, String>,
}

/// Base64 as protobuf's JSON writes it (standard), or its URL-safe form, which it also reads.
fn base64(field: &'static str, text: &str) -> Result<Vec<u8>, BundleError> {
    let text = text.trim();
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(text))
        .map_err(|_| BundleError::Base64(field))
}

/// An ECDSA P-256 signature, ASN.1 DER as sigstore writes it (or the fixed 64-byte form).
fn ecdsa(bytes: &[u8]) -> Option<EcdsaSignature> {
    EcdsaSignature::from_der(bytes)
        .or_else(|_| EcdsaSignature::from_slice(bytes))
        .ok()
}

/// DSSE's pre-authentication encoding: what an envelope's signatures sign.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// Checks that the Sigstore bundle `json` is a signature by `key` of the manifest `digest`
/// (`sha256:<hex>`).
pub fn verify(key: &VerifyingKey, json: &[u8], digest: &str) -> Result<(), BundleError> {
    let bundle: Bundle =
        serde_json::from_slice(json).map_err(|e| BundleError::Malformed(e.to_string()))?;
    if !bundle.media_type.starts_with(BUNDLE_MEDIA_TYPE_PREFIX) {
        return Err(BundleError::Malformed(format!(
            "the media type is {:?}",
            bundle.media_type
        )));
    }
    match (bundle.dsse_envelope, bundle.message_signature) {
        (Some(envelope), _) => verify_envelope(key, &envelope, digest),
        (None, Some(message)) => verify_message(key, &message, digest),
        (None, None) => Err(BundleError::Empty),
    }
}

fn verify_envelope(
    key: &VerifyingKey,
    envelope: &Envelope,
    digest: &str,
) -> Result<(), BundleError> {
    if envelope.payload_type != INTOTO_PAYLOAD_TYPE {
        return Err(BundleError::PayloadType(envelope.payload_type.clone()));
    }
    let payload = base64("the DSSE payload", &envelope.payload)?;
    let signed = pae(&envelope.payload_type, &payload);
    let by_key = envelope.signatures.iter().any(|s| {
        base64("a DSSE signature", &s.sig)
            .ok()
            .and_then(|der| ecdsa(&der))
            .is_some_and(|signature| key.verify(&signed, &signature).is_ok())
    });
    if !by_key {
        return Err(BundleError::WrongKey);
    }
    let statement: Statement = serde_json::from_slice(&payload).map_err(|e| {
        BundleError::Statement(format!("the payload is not an in-toto statement: {e}"))
    })?;
    if statement.kind != STATEMENT_TYPE {
        return Err(BundleError::Statement(format!(
            "the statement type is {:?}",
            statement.kind
        )));
    }
    if statement.predicate_type != SIGN_PREDICATE_TYPE {
        return Err(BundleError::Statement(format!(
            "the predicate type is {:?} (an attestation, not a signature)",
            statement.predicate_type
        )));
    }
    let (algorithm, hex) = digest.split_once(':').unwrap_or(("sha256", digest));
    let names = |s: &Subject| {
        s.digest
            .get(algorithm)
            .is_some_and(|h| h.eq_ignore_ascii_case(hex))
    };
    if statement.subject.iter().any(names) {
        return Ok(());
    }
    let found: Vec<String> = statement
        .subject
        .iter()
        .flat_map(|s| s.digest.iter().map(|(a, h)| format!("{a}:{h}")))
        .collect();
    Err(BundleError::OtherDigest {
        found: if found.is_empty() {
            "(no subject)".to_string()
        } else {
            found.join(", ")
        },
        digest: digest.to_string(),
    })
}

fn verify_message(
    key: &VerifyingKey,
    message: &MessageSignature,
    digest: &str,
) -> Result<(), BundleError> {
    let hex = digest.strip_prefix("sha256:").ok_or_else(|| {
        BundleError::Malformed(format!("the manifest digest {digest} is not sha256"))
    })?;
    let signature = base64("the message signature", &message.signature)?;
    let signature = ecdsa(&signature).ok_or(BundleError::WrongKey)?;
    let prehash: Vec<u8> = (0..hex.len() / 2)
        .filter_map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
        .collect();
    if prehash.len() != 32 {
        return Err(BundleError::Malformed(format!(
            "the manifest digest {digest} is not sha256:<64 hex>"
        )));
    }
    if key.verify_prehash(&prehash, &signature).is_err() {
        return Err(BundleError::WrongKey);
    }
    if let Some(named) = &message.message_digest {
        let named_digest = base64("the message digest", &named.digest)?;
        if named.algorithm != "SHA2_256" || named_digest != prehash {
            let found = named_digest
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>();
            return Err(BundleError::OtherDigest {
                found: format!("{}:{found}", named.algorithm),
                digest: digest.to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
