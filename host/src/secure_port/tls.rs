//! The secure port's TLS: the serving certificate (`tlsCertFile`/`tlsPrivateKeyFile`, else a
//! self-signed one kept in `--cert-dir` as upstream's `kubelet.crt`/`kubelet.key`, made once
//! and reused across restarts), the client CAs of `authentication.x509.clientCAFile`, and the
//! user a verified client certificate names.

use super::authn::UserInfo;
use crate::config::KubeletConfiguration;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long a self-signed serving certificate is valid (upstream: one year).
const SELF_SIGNED_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);

/// Why the secure port's TLS could not be set up; each names the file and the field.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file named by the config could not be read.
    #[error("{field} {file}: cannot read: {source}")]
    Read {
        /// The config field that names it.
        field: &'static str,
        /// The file.
        file: PathBuf,
        /// What the filesystem said.
        #[source]
        source: std::io::Error,
    },
    /// A file holds no usable PEM certificate or key.
    #[error("{field} {file}: {message}")]
    Pem {
        /// The config field that names it.
        field: &'static str,
        /// The file.
        file: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The self-signed certificate could not be made or written to `--cert-dir`.
    #[error("self-signed serving certificate in {dir}: {message}")]
    SelfSigned {
        /// `--cert-dir`.
        dir: PathBuf,
        /// What failed.
        message: String,
    },
    /// rustls refused the certificate and key (they do not match, an unsupported key).
    #[error("serving certificate {cert_file} with key {key_file}: {source}")]
    Config {
        /// The certificate file.
        cert_file: PathBuf,
        /// The key file.
        key_file: PathBuf,
        /// What rustls said.
        #[source]
        source: rustls::Error,
    },
}

/// The certificate chain and key the port serves with, and the files they came from (shown
/// in `/configz` as upstream shows the generated paths).
pub struct ServingCertificate {
    /// Leaf first.
    pub chain: Vec<CertificateDer<'static>>,
    /// The leaf's private key.
    pub key: PrivateKeyDer<'static>,
    /// Where the chain is.
    pub cert_file: PathBuf,
    /// Where the key is.
    pub key_file: PathBuf,
}

/// The serving certificate `kubelet` names, else the self-signed one of `cert_dir` for
/// `host` and `ips` (its SANs).
pub fn serving_certificate(
    kubelet: &KubeletConfiguration,
    cert_dir: &Path,
    host: &str,
    ips: &[IpAddr],
) -> Result<ServingCertificate, TlsError> {
    match (&kubelet.tls_cert_file, &kubelet.tls_private_key_file) {
        (Some(cert), Some(key)) => load(Path::new(cert), Path::new(key)),
        _ => self_signed(cert_dir, host, ips),
    }
}

fn load(cert_file: &Path, key_file: &Path) -> Result<ServingCertificate, TlsError> {
    let chain = read_certificates("tlsCertFile", cert_file)?;
    let key = PrivateKeyDer::from_pem_file(key_file)
        .map_err(|e| pem_error("tlsPrivateKeyFile", key_file, e))?;
    Ok(ServingCertificate {
        chain,
        key,
        cert_file: cert_file.to_path_buf(),
        key_file: key_file.to_path_buf(),
    })
}

fn pem_error(field: &'static str, file: &Path, error: rustls::pki_types::pem::Error) -> TlsError {
    match error {
        rustls::pki_types::pem::Error::Io(source) => TlsError::Read {
            field,
            file: file.to_path_buf(),
            source,
        },
        rustls::pki_types::pem::Error::NoItemsFound => TlsError::Pem {
            field,
            file: file.to_path_buf(),
            message: "holds no PEM private key".into(),
        },
        other => TlsError::Pem {
            field,
            file: file.to_path_buf(),
            message: format!("not valid PEM: {other}"),
        },
    }
}

fn read_certificates(
    field: &'static str,
    file: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let chain = CertificateDer::pem_file_iter(file)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| pem_error(field, file, e))?;
    if chain.is_empty() {
        return Err(TlsError::Pem {
            field,
            file: file.to_path_buf(),
            message: "holds no PEM certificate".into(),
        });
    }
    Ok(chain)
}

/// `cert_dir/kubelet.crt` and `kubelet.key`: reused while they load and the certificate has
/// not expired, else made anew (a self-signed certificate for `host` and `ips`).
pub fn self_signed(
    cert_dir: &Path,
    host: &str,
    ips: &[IpAddr],
) -> Result<ServingCertificate, TlsError> {
    let cert_file = cert_dir.join("kubelet.crt");
    let key_file = cert_dir.join("kubelet.key");
    if cert_file.exists() || key_file.exists() {
        match load(&cert_file, &key_file) {
            Ok(found) if still_valid(&found.chain[0]) => return Ok(found),
            Ok(_) => {
                tracing::warn!(file = %cert_file.display(), "the self-signed serving certificate expired; making a new one")
            }
            Err(error) => {
                tracing::warn!(%error, "the self-signed serving certificate cannot be used; making a new one")
            }
        }
    }
    let failed = |message: String| TlsError::SelfSigned {
        dir: cert_dir.to_path_buf(),
        message,
    };
    let key = rcgen::KeyPair::generate().map_err(|e| failed(e.to_string()))?;
    let mut params = rcgen::CertificateParams::default();
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + SELF_SIGNED_VALIDITY;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        format!("{host}@{}", now.unix_timestamp()),
    );
    if let Ok(name) = rcgen::string::Ia5String::try_from(host) {
        params.subject_alt_names.push(rcgen::SanType::DnsName(name));
    }
    for ip in ips {
        params
            .subject_alt_names
            .push(rcgen::SanType::IpAddress(*ip));
    }
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::DigitalSignature,
        rcgen::KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params
        .self_signed(&key)
        .map_err(|e| failed(e.to_string()))?;
    std::fs::create_dir_all(cert_dir).map_err(|e| failed(format!("cannot create it: {e}")))?;
    write_atomically(&key_file, key.serialize_pem().as_bytes(), 0o600)
        .map_err(|e| failed(e.to_string()))?;
    write_atomically(&cert_file, cert.pem().as_bytes(), 0o644)
        .map_err(|e| failed(e.to_string()))?;
    tracing::info!(file = %cert_file.display(), %host, "made a self-signed serving certificate");
    Ok(ServingCertificate {
        chain: vec![cert.der().clone()],
        key: PrivateKeyDer::try_from(key.serialize_der()).map_err(|e| failed(e.to_string()))?,
        cert_file,
        key_file,
    })
}

/// Writes `bytes` to `file` by a rename, so a crash never leaves half a key behind.
fn write_atomically(file: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let tmp = file.with_extension("tmp");
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)?;
    out.write_all(bytes)?;
    out.sync_all()?;
    std::fs::rename(&tmp, file)
}

fn still_valid(der: &CertificateDer<'_>) -> bool {
    x509_parser::parse_x509_certificate(der).is_ok_and(|(_, cert)| cert.validity().is_valid())
}

/// The rustls server config of the port: `certificate`, TLS 1.2 and 1.3, HTTP/1.1 (upgrades
/// for exec and port-forward need it), and with `client_ca_file` a client certificate asked
/// for, optional, and verified against those CAs (a certificate of another CA fails the
/// handshake).
pub fn server_config(
    certificate: ServingCertificate,
    client_ca_file: Option<&Path>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|source| TlsError::Config {
            cert_file: certificate.cert_file.clone(),
            key_file: certificate.key_file.clone(),
            source,
        })?;
    let builder = match client_ca_file {
        Some(file) => {
            let field = "authentication.x509.clientCAFile";
            let mut roots = rustls::RootCertStore::empty();
            for ca in read_certificates(field, file)? {
                roots.add(ca).map_err(|e| TlsError::Pem {
                    field,
                    file: file.to_path_buf(),
                    message: format!("not a usable CA certificate: {e}"),
                })?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .allow_unauthenticated()
            .build()
            .map_err(|e| TlsError::Pem {
                field,
                file: file.to_path_buf(),
                message: e.to_string(),
            })?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(certificate.chain, certificate.key)
        .map_err(|source| TlsError::Config {
            cert_file: certificate.cert_file,
            key_file: certificate.key_file,
            source,
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The user a verified client certificate names (upstream's `CommonNameUserConversion`): the
/// subject's CN, the O entries as groups. No CN: no user.
pub fn client_user(leaf: &CertificateDer<'_>) -> Option<UserInfo> {
    let (_, cert) = x509_parser::parse_x509_certificate(leaf).ok()?;
    let subject = cert.subject();
    let name = subject.iter_common_name().next()?.as_str().ok()?;
    if name.is_empty() {
        return None;
    }
    Some(UserInfo {
        name: name.to_string(),
        groups: subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok())
            .map(str::to_string)
            .collect(),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests;
