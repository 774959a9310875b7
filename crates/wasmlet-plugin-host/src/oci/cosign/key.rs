//! Signing keys as `wasmlet plugin sign --key` reads them: cosign's encrypted key files
//! (`cosign generate-key-pair`), and plain PKCS#8 or SEC1 PEM.
//!
//! cosign writes a PEM block `ENCRYPTED SIGSTORE PRIVATE KEY` (older releases:
//! `ENCRYPTED COSIGN PRIVATE KEY`) whose body is a JSON envelope: an scrypt key derivation
//! (`N`, `r`, `p`, salt) from the password, and a NaCl secretbox (XSalsa20-Poly1305, the tag
//! before the ciphertext) sealing the PKCS#8 DER of the private key. The password comes from
//! `COSIGN_PASSWORD`, as it does for cosign; an empty password is a valid one.

use base64::Engine as _;
use crypto_secretbox::aead::{Aead, KeyInit};
use crypto_secretbox::XSalsa20Poly1305;
use p256::ecdsa::SigningKey;
use p256::pkcs8::der::pem;
use p256::pkcs8::DecodePrivateKey;
use serde::Deserialize;

/// The PEM labels of cosign's encrypted private keys, current first.
pub const ENCRYPTED_KEY_LABELS: [&str; 2] = [
    "ENCRYPTED SIGSTORE PRIVATE KEY",
    "ENCRYPTED COSIGN PRIVATE KEY",
];

/// The scrypt parameter sets cosign's key library writes (legacy, standard, OWASP): anything
/// else is refused before deriving, so a crafted file cannot ask for gigabytes of memory.
const SCRYPT_PARAMS: [(u64, u32, u32); 3] = [(1 << 15, 8, 1), (1 << 16, 8, 1), (1 << 17, 8, 1)];

/// Why a key file could not give a signing key.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// No PEM block could be read.
    #[error("not a PEM file: {0}")]
    NotPem(String),
    /// A PEM block of a kind no key is read from.
    #[error(
        "a PEM block {label:?} is no private key wasmlet signs with: give cosign's encrypted key \
         (`cosign generate-key-pair`), or an unencrypted P-256 key in PKCS#8 (`PRIVATE KEY`) or \
         SEC1 (`EC PRIVATE KEY`) PEM"
    )]
    UnsupportedLabel {
        /// The PEM label found.
        label: String,
    },
    /// The encrypted key's envelope is not cosign's JSON.
    #[error("an encrypted cosign key whose envelope cannot be read: {0}")]
    Envelope(String),
    /// The envelope names a key derivation or cipher cosign does not write.
    #[error("an encrypted cosign key with {what}, which cosign does not write")]
    Unsupported {
        /// What was found.
        what: String,
    },
    /// The password does not open the key.
    #[error(
        "the password does not decrypt this cosign key{}: set COSIGN_PASSWORD to the password \
         given to `cosign generate-key-pair`",
        if *.password_set { " (COSIGN_PASSWORD is set)" } else { " (COSIGN_PASSWORD is not set, the empty password was tried)" }
    )]
    WrongPassword {
        /// Whether `COSIGN_PASSWORD` was set.
        password_set: bool,
    },
    /// The key is not ECDSA P-256, the only kind wasmlet signs and verifies with.
    #[error(
        "not an ECDSA P-256 private key (cosign's default kind; other `--signing-algorithm` \
         kinds are not supported)"
    )]
    NotP256,
}

/// The password for an encrypted key, as cosign takes it from `COSIGN_PASSWORD`.
#[derive(Debug, Clone, Default)]
pub struct Password {
    bytes: Vec<u8>,
    set: bool,
}

impl Password {
    /// `COSIGN_PASSWORD` from the environment; unset is the empty password.
    pub fn from_env() -> Self {
        match std::env::var_os("COSIGN_PASSWORD") {
            Some(value) => Self::new(value.into_encoded_bytes()),
            None => Self::default(),
        }
    }

    /// A given password.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            bytes: bytes.into(),
            set: true,
        }
    }
}

#[derive(Deserialize)]
struct Envelope {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(Deserialize)]
struct Kdf {
    name: String,
    params: KdfParams,
    salt: String,
}

#[derive(Deserialize)]
struct KdfParams {
    #[serde(rename = "N")]
    n: u64,
    r: u32,
    p: u32,
}

#[derive(Deserialize)]
struct Cipher {
    name: String,
    nonce: String,
}

/// The P-256 signing key in `pem`: cosign's encrypted key (opened with `password`), or an
/// unencrypted PKCS#8 or SEC1 key.
pub fn signing_key(pem_text: &str, password: &Password) -> Result<SigningKey, KeyError> {
    let label = pem::decode_label(pem_text.trim_start().as_bytes())
        .map_err(|e| KeyError::NotPem(e.to_string()))?;
    match label {
        "PRIVATE KEY" => SigningKey::from_pkcs8_pem(pem_text).map_err(|_| KeyError::NotP256),
        "EC PRIVATE KEY" => p256::SecretKey::from_sec1_pem(pem_text)
            .map(SigningKey::from)
            .map_err(|_| KeyError::NotP256),
        label if ENCRYPTED_KEY_LABELS.contains(&label) => {
            let (_, body) = pem::decode_vec(pem_text.trim_start().as_bytes())
                .map_err(|e| KeyError::NotPem(e.to_string()))?;
            let der = decrypt(&body, password)?;
            SigningKey::from_pkcs8_der(&der).map_err(|_| KeyError::NotP256)
        }
        other => Err(KeyError::UnsupportedLabel {
            label: other.to_string(),
        }),
    }
}

/// Opens cosign's JSON envelope `body` with `password`: the PKCS#8 DER inside.
fn decrypt(body: &[u8], password: &Password) -> Result<Vec<u8>, KeyError> {
    let envelope: Envelope =
        serde_json::from_slice(body).map_err(|e| KeyError::Envelope(e.to_string()))?;
    if envelope.kdf.name != "scrypt" {
        return Err(KeyError::Unsupported {
            what: format!("the key derivation {:?}", envelope.kdf.name),
        });
    }
    if envelope.cipher.name != "nacl/secretbox" {
        return Err(KeyError::Unsupported {
            what: format!("the cipher {:?}", envelope.cipher.name),
        });
    }
    let KdfParams { n, r, p } = envelope.kdf.params;
    if !SCRYPT_PARAMS.contains(&(n, r, p)) {
        return Err(KeyError::Unsupported {
            what: format!("the scrypt parameters N={n} r={r} p={p}"),
        });
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let field = |name: &str, text: &str| {
        b64.decode(text)
            .map_err(|e| KeyError::Envelope(format!("{name} is not base64: {e}")))
    };
    let salt = field("kdf.salt", &envelope.kdf.salt)?;
    let nonce = field("cipher.nonce", &envelope.cipher.nonce)?;
    let ciphertext = field("ciphertext", &envelope.ciphertext)?;
    if nonce.len() != 24 {
        return Err(KeyError::Envelope(format!(
            "cipher.nonce is {} bytes, not 24",
            nonce.len()
        )));
    }
    // `n` is one of the powers of two above, so its log fits a u8.
    let log_n = n.trailing_zeros() as u8;
    let params = scrypt::Params::new(log_n, r, p, 32)
        .map_err(|e| KeyError::Envelope(format!("scrypt parameters: {e}")))?;
    let mut key = [0u8; 32];
    scrypt::scrypt(&password.bytes, &salt, &params, &mut key)
        .map_err(|e| KeyError::Envelope(format!("scrypt: {e}")))?;
    let cipher = XSalsa20Poly1305::new(&key.into());
    cipher
        .decrypt(nonce.as_slice().into(), ciphertext.as_slice())
        .map_err(|_| KeyError::WrongPassword {
            password_set: password.set,
        })
}

#[cfg(test)]
mod tests;
