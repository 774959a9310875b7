//! cosign-compatible key-pair signatures, checked offline, in the two layouts cosign writes.
//!
//! The `.sig` tag: cosign stores the signatures of the manifest `sha256:<hex>` as the layers
//! of a manifest tagged `sha256-<hex>.sig` in the same repository: each layer a "simple
//! signing" JSON payload naming the manifest digest, its annotation
//! `dev.cosignproject.cosign/signature` the base64 ECDSA P-256 / SHA-256 signature (ASN.1 DER)
//! of the payload's bytes. This is what `wasmlet plugin sign` writes.
//!
//! Sigstore bundles ([`bundle`]): `cosign sign --new-bundle-format` (cosign v3's default)
//! attaches a bundle as an OCI 1.1 referrer of the manifest instead.
//!
//! Public keys are PEM SubjectPublicKeyInfo, as `cosign generate-key-pair` writes `cosign.pub`;
//! private keys are read by [`key`], cosign's encrypted files included.

pub mod bundle;
pub mod key;

pub use key::{signing_key, KeyError, Password};

use base64::Engine as _;
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::ecdsa::{Signature as EcdsaSignature, SigningKey, VerifyingKey};
use p256::pkcs8::DecodePublicKey;
use serde::{Deserialize, Serialize};

/// The media type of a simple-signing payload layer.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation carrying the base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
const SIGNATURE_TYPE: &str = "cosign container image signature";

/// One signature layer: the signed payload and its signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// The payload, base64 (as stored by the node).
    pub payload: String,
    /// The signature, base64 of ASN.1 DER.
    pub signature: String,
}

/// The tag cosign gives the signatures of the manifest `digest`.
pub fn signature_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1) + ".sig"
}

#[derive(Serialize, Deserialize)]
struct Payload {
    critical: Critical,
    optional: Option<serde_json::Value>,
}

#[derive(Serialize, Deserialize)]
struct Critical {
    identity: Identity,
    image: Image,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Serialize, Deserialize)]
struct Identity {
    #[serde(rename = "docker-reference")]
    docker_reference: String,
}

#[derive(Serialize, Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: String,
}

/// The simple-signing payload for the manifest `digest` of `repository` (`registry/repo`).
pub fn payload(repository: &str, digest: &str) -> Vec<u8> {
    let payload = Payload {
        critical: Critical {
            identity: Identity {
                docker_reference: repository.to_string(),
            },
            image: Image {
                docker_manifest_digest: digest.to_string(),
            },
            kind: SIGNATURE_TYPE.to_string(),
        },
        optional: None,
    };
    serde_json::to_vec(&payload).unwrap_or_default()
}

/// Signs `payload` with a P-256 private key in PEM (PKCS#8 `PRIVATE KEY`, SEC1
/// `EC PRIVATE KEY`, or cosign's encrypted key with an empty password); returns the base64
/// DER signature.
pub fn sign(private_key_pem: &str, payload: &[u8]) -> Result<String, KeyError> {
    let key = signing_key(private_key_pem, &Password::default())?;
    Ok(sign_with(&key, payload))
}

/// Signs `payload` with `key`; returns the base64 DER signature, as the `.sig` layout keeps it.
pub fn sign_with(key: &SigningKey, payload: &[u8]) -> String {
    let signature: EcdsaSignature = key.sign(payload);
    base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes())
}

/// The public key PEM of a private key PEM.
#[cfg(test)]
pub fn public_key_pem(private_key_pem: &str) -> Option<String> {
    use p256::pkcs8::{EncodePublicKey, LineEnding};
    let key = signing_key(private_key_pem, &Password::default()).ok()?;
    VerifyingKey::from(&key)
        .to_public_key_pem(LineEnding::LF)
        .ok()
}

/// Everything a registry holds that may sign one manifest: the layers of its `.sig` tag and
/// the Sigstore bundles attached to it as referrers. The node's store keeps it as JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attached {
    /// The `.sig` tag's signatures.
    #[serde(default)]
    pub signatures: Vec<Signature>,
    /// The bundles' JSON.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bundles: Vec<String>,
}

impl Attached {
    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.signatures.is_empty() && self.bundles.is_empty()
    }
}

/// Why no signature of a manifest was accepted.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The configured public key cannot be read.
    #[error("the public key is not a P-256 PEM public key: {0}")]
    PublicKey(String),
    /// Nothing signs the manifest in either layout.
    #[error(
        "unsigned: no signature ({} in the same repository) and no Sigstore bundle referring to {digest}",
        signature_tag(digest)
    )]
    Unsigned {
        /// The manifest digest.
        digest: String,
    },
    /// Signatures were found, none by the key for this manifest.
    #[error("no valid signature by the configured key: {}", reasons.join("; "))]
    NoneValid {
        /// Why each one was refused.
        reasons: Vec<String>,
    },
}

/// Checks that one of `signatures` is by `public_key_pem` and names the manifest `digest`.
pub fn verify(
    public_key_pem: &str,
    signatures: &[Signature],
    digest: &str,
) -> Result<(), VerifyError> {
    let attached = Attached {
        signatures: signatures.to_vec(),
        bundles: Vec::new(),
    };
    verify_attached(public_key_pem, &attached, digest)
}

/// Checks that one of the `.sig` signatures or bundles in `attached` is by `public_key_pem`
/// and signs the manifest `digest`.
pub fn verify_attached(
    public_key_pem: &str,
    attached: &Attached,
    digest: &str,
) -> Result<(), VerifyError> {
    let key = VerifyingKey::from_public_key_pem(public_key_pem.trim())
        .map_err(|e| VerifyError::PublicKey(e.to_string()))?;
    if attached.is_empty() {
        return Err(VerifyError::Unsigned {
            digest: digest.to_string(),
        });
    }
    let mut reasons = Vec::new();
    for found in &attached.signatures {
        match verify_simple_signing(&key, found, digest) {
            Ok(()) => return Ok(()),
            Err(reason) => reasons.push(format!("{}: {reason}", signature_tag(digest))),
        }
    }
    for found in &attached.bundles {
        match bundle::verify(&key, found.as_bytes(), digest) {
            Ok(()) => return Ok(()),
            Err(reason) => reasons.push(format!("bundle: {reason}")),
        }
    }
    Err(VerifyError::NoneValid { reasons })
}

/// Why one `.sig` signature does not sign the manifest.
#[derive(Debug, thiserror::Error)]
enum SimpleSigningError {
    /// The payload is not base64.
    #[error("its payload is not base64")]
    PayloadEncoding(#[source] base64::DecodeError),
    /// The signature is not base64.
    #[error("the signature is not base64")]
    SignatureEncoding(#[source] base64::DecodeError),
    /// The signature is not DER.
    #[error("the signature is not an ECDSA P-256 signature")]
    SignatureFormat(#[source] p256::ecdsa::Error),
    /// Another key signed the payload, or it was altered.
    #[error("not signed by the configured key")]
    WrongKey(#[source] p256::ecdsa::Error),
    /// The signed payload is not cosign's simple-signing JSON.
    #[error("signed, but the payload is not simple signing: {0}")]
    Payload(#[source] serde_json::Error),
    /// A simple-signing payload of another type.
    #[error("signed, but the payload type is {0:?}")]
    PayloadType(String),
    /// A signature of another manifest (a `.sig` copied to another digest).
    #[error("signed, but for the manifest {signed}, not {wanted}")]
    OtherManifest {
        /// The digest the payload names.
        signed: String,
        /// The digest being checked.
        wanted: String,
    },
}

/// One `.sig` layer: signed by `key`, a simple-signing payload naming `digest`.
fn verify_simple_signing(
    key: &VerifyingKey,
    found: &Signature,
    digest: &str,
) -> Result<(), SimpleSigningError> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let payload = b64
        .decode(&found.payload)
        .map_err(SimpleSigningError::PayloadEncoding)?;
    let der = b64
        .decode(found.signature.trim())
        .map_err(SimpleSigningError::SignatureEncoding)?;
    let signature = EcdsaSignature::from_der(&der).map_err(SimpleSigningError::SignatureFormat)?;
    key.verify(&payload, &signature)
        .map_err(SimpleSigningError::WrongKey)?;
    let payload: Payload = serde_json::from_slice(&payload).map_err(SimpleSigningError::Payload)?;
    if payload.critical.kind != SIGNATURE_TYPE {
        return Err(SimpleSigningError::PayloadType(payload.critical.kind));
    }
    if payload.critical.image.docker_manifest_digest != digest {
        return Err(SimpleSigningError::OtherManifest {
            signed: payload.critical.image.docker_manifest_digest,
            wanted: digest.to_string(),
        });
    }
    Ok(())
}
