//! TLS to registries: the CA certificates a `caFile` (`--ca-file`) adds to the system roots,
//! and what a failed handshake means to whoever has to fix it. A certificate the node does not
//! trust is a refusal, not an outage: retrying does not make it trusted.

use oci_client::client::{Certificate, CertificateEncoding};
use oci_client::errors::OciDistributionError;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::CertificateError;
use std::path::{Path, PathBuf};

/// What to do about a registry whose TLS this node cannot use.
const ADVICE: &str = "give the registry's CA certificate (PEM) in the plugin's caFile \
     (wasmlet plugin push|pull|sign: --ca-file FILE), or use plain HTTP with insecure: true \
     (--insecure) if the registry serves it";

/// A CA file that cannot be used; names the file.
#[derive(Debug, thiserror::Error)]
pub enum CaFileError {
    /// The file could not be read.
    #[error("CA file {}: cannot read: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A PEM block of the file is malformed.
    #[error("CA file {}: not PEM: {source}", file.display())]
    Pem {
        /// The file.
        file: PathBuf,
        /// Where the PEM broke.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// The file holds no `CERTIFICATE` block.
    #[error("CA file {}: holds no certificate (expected PEM blocks -----BEGIN CERTIFICATE-----)", file.display())]
    Empty {
        /// The file.
        file: PathBuf,
    },
    /// A `CERTIFICATE` block is not an X.509 certificate a root store takes.
    #[error("CA file {}: certificate {index} is not usable as a CA: {source}", file.display())]
    Invalid {
        /// The file.
        file: PathBuf,
        /// Which certificate, from 1.
        index: usize,
        /// Why.
        #[source]
        source: rustls::Error,
    },
}

/// The certificates of the PEM file `file`, each checked as a trust anchor, for
/// `ClientConfig::extra_root_certificates`.
pub(super) fn ca_certificates(file: &Path) -> Result<Vec<Certificate>, CaFileError> {
    let pem = std::fs::read(file).map_err(|source| CaFileError::Read {
        file: file.to_path_buf(),
        source,
    })?;
    let mut certificates = Vec::new();
    let mut anchors = rustls::RootCertStore::empty();
    for (index, der) in CertificateDer::pem_slice_iter(&pem).enumerate() {
        let der = der.map_err(|source| CaFileError::Pem {
            file: file.to_path_buf(),
            source,
        })?;
        anchors
            .add(der.clone())
            .map_err(|source| CaFileError::Invalid {
                file: file.to_path_buf(),
                index: index + 1,
                source,
            })?;
        certificates.push(Certificate {
            encoding: CertificateEncoding::Der,
            data: der.to_vec(),
        });
    }
    if certificates.is_empty() {
        return Err(CaFileError::Empty {
            file: file.to_path_buf(),
        });
    }
    Ok(certificates)
}

/// `registry` with its port: the one given, else HTTPS's or HTTP's.
pub(super) fn address(registry: &str, plain_http: bool) -> String {
    let has_port = registry
        .rsplit_once(':')
        .is_some_and(|(_, port)| port.parse::<u16>().is_ok());
    match (has_port, plain_http) {
        (true, _) => registry.to_string(),
        (false, false) => format!("{registry}:443"),
        (false, true) => format!("{registry}:80"),
    }
}

/// Why TLS with a registry failed, when a request failed for that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TlsFailure {
    /// Its certificate chains to no root this node trusts (a private CA not given).
    UnknownIssuer(String),
    /// Its certificate does not name the host the reference names.
    WrongName(String),
    /// Its certificate is refused for another reason (expired, not yet valid, revoked...).
    BadCertificate(String),
    /// It did not answer in TLS: a plain-HTTP registry reached over HTTPS.
    NotTls(String),
    /// Reached over plain HTTP, it asked for HTTPS: a TLS registry on loopback without a CA.
    WantsHttps(String),
    /// Another handshake failure.
    Handshake(String),
}

impl TlsFailure {
    /// The failure in `error`'s chain, if it is one; `plain_http`: the request used HTTP.
    pub(super) fn of(error: &OciDistributionError, plain_http: bool) -> Option<Self> {
        if plain_http {
            return match error {
                OciDistributionError::ServerError {
                    code: 400, message, ..
                } if message.to_ascii_lowercase().contains("https") => {
                    Some(Self::WantsHttps(message.trim().to_string()))
                }
                _ => None,
            };
        }
        Self::in_chain(error)
    }

    /// The first rustls error in `error`'s chain, as a failure.
    pub(super) fn in_chain(error: &(dyn std::error::Error + 'static)) -> Option<Self> {
        let mut next = Some(error);
        while let Some(current) = next {
            // An io::Error's `source` is its inner error's source: look at the inner one.
            let inner = current
                .downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .map(|inner| inner as &(dyn std::error::Error + 'static));
            if let Some(tls) = inner.unwrap_or(current).downcast_ref::<rustls::Error>() {
                return Some(Self::from_rustls(tls));
            }
            next = match inner {
                Some(inner) => Some(inner),
                None => current.source(),
            };
        }
        None
    }

    fn from_rustls(error: &rustls::Error) -> Self {
        let detail = error.to_string();
        match error {
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
                Self::UnknownIssuer(detail)
            }
            rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            ) => Self::WrongName(detail),
            rustls::Error::InvalidCertificate(_) => Self::BadCertificate(detail),
            rustls::Error::InvalidMessage(_) | rustls::Error::PeerSentOversizedRecord => {
                Self::NotTls(detail)
            }
            _ => Self::Handshake(detail),
        }
    }

    /// What failed with `address` (host:port), and what to do.
    pub(super) fn message(&self, address: &str) -> String {
        match self {
            Self::UnknownIssuer(detail) => format!(
                "TLS with {address} failed: its certificate is not signed by an authority this node trusts ({detail}); {ADVICE}"
            ),
            Self::WrongName(detail) => format!(
                "TLS with {address} failed: its certificate is not valid for that name ({detail}); name the registry as its certificate does, or give it a certificate for this name"
            ),
            Self::BadCertificate(detail) => format!(
                "TLS with {address} failed: its certificate is refused ({detail}); renew the registry's certificate, or {ADVICE}"
            ),
            Self::NotTls(detail) => format!(
                "{address} does not answer in TLS ({detail}); a registry not on loopback is reached over HTTPS: set insecure: true (--insecure) if it serves plain HTTP"
            ),
            Self::WantsHttps(detail) => format!(
                "{address} asks for HTTPS ({detail}); a loopback registry is reached over plain HTTP unless its CA is given: give the registry's CA certificate (PEM) in the plugin's caFile (--ca-file FILE)"
            ),
            Self::Handshake(detail) => format!("TLS with {address} failed ({detail}); {ADVICE}"),
        }
    }
}
