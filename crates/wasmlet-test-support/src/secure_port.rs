//! Clients of a test node's authenticated port (`port`): a client CA made with rcgen, client
//! certificates it signs, TLS that pins the node's self-signed serving certificate, and a node
//! started with that CA. Used by the secure-port tests and the port-forward benchmark.

use crate::harness::{Node, NodeOptions, SecurePortOptions};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A client CA and the client certificates it signs.
pub struct TestPki {
    dir: tempfile::TempDir,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

/// A client certificate and its key.
pub struct ClientCert {
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
}

impl TestPki {
    /// A new self-signed client CA named `name`, written to a temporary directory.
    pub fn new(name: &str) -> TestPki {
        let dir = tempfile::tempdir().unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).unwrap();
        std::fs::write(dir.path().join("ca.crt"), cert.pem()).unwrap();
        TestPki {
            dir,
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// The CA certificate's PEM file, for a node's `clientCAFile`.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }

    /// A client certificate for user `cn` in groups `orgs`.
    pub fn client(&self, cn: &str, orgs: &[&str]) -> ClientCert {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        for org in orgs {
            params
                .distinguished_name
                .push(rcgen::DnType::OrganizationName, *org);
        }
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        ClientCert {
            cert: cert.der().clone(),
            key: PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
        }
    }
}

/// Accepts exactly the node's self-signed `kubelet.crt` (the test connects to 127.0.0.1,
/// which is not among its names).
#[derive(Debug)]
struct Pinned(CertificateDer<'static>, Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.0.as_ref() {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General("not the node's kubelet.crt".into()))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.1.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.1.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.1.signature_verification_algorithms.supported_schemes()
    }
}

/// TLS toward one node's secure port: its own serving certificate pinned, with or without a
/// client certificate (the port-forward bench dials with it too).
pub fn tls_config(node: &Node, client: Option<&ClientCert>) -> rustls::ClientConfig {
    let served = std::fs::read(node.dir.path().join("root/pki/kubelet.crt")).unwrap();
    let served = rustls::pki_types::pem::PemObject::from_pem_slice(&served).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Pinned(served, provider)));
    match client {
        Some(client) => builder
            .with_client_auth_cert(vec![client.cert.clone()], client.key.clone_key())
            .unwrap(),
        None => builder.with_no_client_auth(),
    }
}

/// An HTTPS client of one node's secure port, with or without a client certificate.
pub struct SecureClient {
    agent: ureq::Agent,
    base: String,
}

impl SecureClient {
    /// A client of `node`'s secure port, presenting `client` when given.
    pub fn new(node: &Node, client: Option<&ClientCert>) -> SecureClient {
        SecureClient {
            agent: ureq::AgentBuilder::new()
                .tls_config(Arc::new(tls_config(node, client)))
                .timeout(Duration::from_secs(30))
                .build(),
            base: format!(
                "https://127.0.0.1:{}",
                node.secure_port.expect("a secure port")
            ),
        }
    }

    /// The status and body of `GET path`; `Err` when no HTTP answer came (TLS refused).
    pub fn get(&self, path: &str) -> std::io::Result<(u16, String)> {
        match self.agent.get(&format!("{}{path}", self.base)).call() {
            Ok(response) => Ok((
                response.status(),
                response.into_string().unwrap_or_default(),
            )),
            Err(ureq::Error::Status(code, response)) => {
                Ok((code, response.into_string().unwrap_or_default()))
            }
            Err(ureq::Error::Transport(transport)) => Err(std::io::Error::other(transport)),
        }
    }

    /// The body of a `GET path` answered 200 as a reader, to stop reading whenever.
    pub fn stream(&self, path: &str) -> std::io::Result<impl std::io::Read> {
        self.agent
            .get(&format!("{}{path}", self.base))
            .call()
            .map(|response| response.into_reader())
            .map_err(std::io::Error::other)
    }

    /// The body of a `GET path` answered 200, else `None`.
    pub fn get_ok(&self, path: &str) -> Option<String> {
        self.get(path)
            .ok()
            .and_then(|(code, body)| (code == 200).then_some(body))
    }
}

/// A standalone node whose secure port accepts client certificates of `pki`.
pub fn secure_node(name: &str, pki: &TestPki) -> Node {
    Node::start_with(
        name,
        NodeOptions {
            secure_port: Some(SecurePortOptions {
                client_ca: Some(pki.ca_file()),
            }),
            ..Default::default()
        },
    )
}

/// Waits until the secure port answers `/healthz` to `client` (TLS handshakes included).
pub fn wait_for_port(node: &Node, client: &SecureClient) {
    node.wait_for("the secure port", Duration::from_secs(20), |_| {
        client.get("/healthz").ok()
    });
}
