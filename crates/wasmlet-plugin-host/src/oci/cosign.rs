//! cosign-compatible key-pair signatures, checked offline. cosign stores the signatures of the
//! manifest `sha256:<hex>` as the layers of a manifest tagged `sha256-<hex>.sig` in the same
//! repository: each layer a "simple signing" JSON payload naming the manifest digest, its
//! annotation `dev.cosignproject.cosign/signature` the base64 ECDSA P-256 / SHA-256
//! signature (ASN.1 DER) of the payload's bytes. Public keys are PEM SubjectPublicKeyInfo, as
//! `cosign generate-key-pair` writes `cosign.pub`.

use base64::Engine as _;
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::ecdsa::{Signature as EcdsaSignature, SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey};
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

/// Signs `payload` with a P-256 private key in PEM (PKCS#8 `PRIVATE KEY`, or SEC1
/// `EC PRIVATE KEY` as `openssl ecparam -genkey` writes it); returns the base64 DER signature.
pub fn sign(private_key_pem: &str, payload: &[u8]) -> Result<String, String> {
    let key = SigningKey::from_pkcs8_pem(private_key_pem)
        .or_else(|_| p256::SecretKey::from_sec1_pem(private_key_pem).map(SigningKey::from))
        .map_err(|_| {
            "not an unencrypted P-256 private key in PEM (PKCS#8 or SEC1); cosign's encrypted \
             keys are not read: make one with `openssl genpkey -algorithm EC -pkeyopt \
             ec_paramgen_curve:P-256 -out key.pem`"
                .to_string()
        })?;
    let signature: EcdsaSignature = key.sign(payload);
    Ok(base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes()))
}

/// The public key PEM of a private key PEM.
#[cfg(test)]
pub fn public_key_pem(private_key_pem: &str) -> Option<String> {
    use p256::pkcs8::{EncodePublicKey, LineEnding};
    let key = SigningKey::from_pkcs8_pem(private_key_pem)
        .or_else(|_| p256::SecretKey::from_sec1_pem(private_key_pem).map(SigningKey::from))
        .ok()?;
    VerifyingKey::from(&key)
        .to_public_key_pem(LineEnding::LF)
        .ok()
}

/// Checks that one of `signatures` is by `public_key_pem` and names the manifest `digest`.
pub fn verify(public_key_pem: &str, signatures: &[Signature], digest: &str) -> Result<(), String> {
    let key = VerifyingKey::from_public_key_pem(public_key_pem)
        .map_err(|e| format!("the public key is not a P-256 PEM public key: {e}"))?;
    if signatures.is_empty() {
        return Err(format!(
            "unsigned: no signature ({} in the same repository)",
            signature_tag(digest)
        ));
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut reasons = Vec::new();
    for found in signatures {
        let checked = (|| {
            let payload = b64
                .decode(&found.payload)
                .map_err(|_| "its payload is not base64".to_string())?;
            let der = b64
                .decode(found.signature.trim())
                .map_err(|_| "the signature is not base64".to_string())?;
            let signature = EcdsaSignature::from_der(&der)
                .map_err(|_| "the signature is not an ECDSA P-256 signature".to_string())?;
            key.verify(&payload, &signature)
                .map_err(|_| "not signed by the configured key".to_string())?;
            let payload: Payload = serde_json::from_slice(&payload)
                .map_err(|e| format!("signed, but the payload is not simple signing: {e}"))?;
            if payload.critical.kind != SIGNATURE_TYPE {
                return Err(format!(
                    "signed, but the payload type is {:?}",
                    payload.critical.kind
                ));
            }
            if payload.critical.image.docker_manifest_digest != digest {
                return Err(format!(
                    "signed, but for the manifest {}, not {digest}",
                    payload.critical.image.docker_manifest_digest
                ));
            }
            Ok(())
        })();
        match checked {
            Ok(()) => return Ok(()),
            Err(reason) => reasons.push(reason),
        }
    }
    Err(format!(
        "no valid signature by the configured key: {}",
        reasons.join("; ")
    ))
}
