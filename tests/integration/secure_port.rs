//! The authenticated port (`port`) of a standalone node: client certificates signed by the
//! configured client CA (made here with rcgen), the local rule (`system:masters` only), the
//! self-signed serving certificate reused across restarts, and what the read-only port no
//! longer serves.

use crate::harness::{busybox_pod, Node, NodeOptions, SecurePortOptions};
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
    pub fn get(&self, path: &str) -> Result<(u16, String), String> {
        match self.agent.get(&format!("{}{path}", self.base)).call() {
            Ok(response) => Ok((
                response.status(),
                response.into_string().unwrap_or_default(),
            )),
            Err(ureq::Error::Status(code, response)) => {
                Ok((code, response.into_string().unwrap_or_default()))
            }
            Err(other) => Err(other.to_string()),
        }
    }

    /// The body of a `GET path` answered 200 as a reader, to stop reading whenever.
    pub fn stream(&self, path: &str) -> Result<impl std::io::Read, String> {
        self.agent
            .get(&format!("{}{path}", self.base))
            .call()
            .map(|response| response.into_reader())
            .map_err(|e| e.to_string())
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

fn wait_for_port(node: &Node, client: &SecureClient) {
    node.wait_for("the secure port", Duration::from_secs(20), |_| {
        client.get("/healthz").ok()
    });
}

#[test]
fn standalone_client_certificates_and_the_local_rule() {
    let pki = TestPki::new("wasmlet-test-ca");
    let mut node = secure_node("t-secure", &pki);
    node.write_manifest(
        "hello.yaml",
        &busybox_pod("hello", "", "echo hello over https; exec sleep 3600"),
    );
    node.wait_phase("hello", "Running", Duration::from_secs(30));
    let admin = pki.client("admin", &["system:masters"]);
    let client = SecureClient::new(&node, Some(&admin));
    wait_for_port(&node, &client);

    let pods: serde_json::Value = serde_json::from_str(&client.get_ok("/pods").unwrap()).unwrap();
    assert!(
        pods["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["metadata"]["name"] == "hello-t-secure"),
        "{pods}"
    );
    let log = node.wait_for("the log over https", Duration::from_secs(10), |_| {
        client
            .get_ok("/containerLogs/default/hello-t-secure/main")
            .filter(|t| !t.is_empty())
    });
    assert_eq!(log, "hello over https\n");
    let configz: serde_json::Value =
        serde_json::from_str(&client.get_ok("/configz").unwrap()).unwrap();
    assert_eq!(
        configz["kubeletconfig"]["authentication"]["x509"]["clientCAFile"],
        pki.ca_file().display().to_string()
    );
    assert_eq!(
        client.get("/containerLogs/default/nope/main").unwrap().0,
        404
    );

    // Followers that go away free their connection, file and task at once (the log is idle:
    // nothing is written that would fail).
    let pid = node.pid().unwrap();
    let fds = || {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .count()
    };
    let before = fds();
    for _ in 0..1000 {
        let mut body = client
            .stream("/containerLogs/default/hello-t-secure/main?follow=true")
            .unwrap();
        let mut first = [0u8; 5];
        std::io::Read::read_exact(&mut body, &mut first).unwrap();
        assert_eq!(&first, b"hello");
    }
    node.wait_for(
        "the 1000 aborted followers to be freed",
        Duration::from_secs(20),
        |_| (fds() <= before + 2).then_some(()),
    );

    // No certificate: 401, for every path.
    let anonymous = SecureClient::new(&node, None);
    for path in [
        "/pods",
        "/healthz",
        "/containerLogs/default/hello-t-secure/main",
    ] {
        assert_eq!(
            anonymous.get(path).unwrap(),
            (401, "Unauthorized".to_string()),
            "{path}"
        );
    }
    // A certificate of the right CA outside system:masters: 403 with upstream's message.
    let viewer = SecureClient::new(&node, Some(&pki.client("viewer", &["ops"])));
    assert_eq!(
        viewer
            .get("/containerLogs/default/hello-t-secure/main")
            .unwrap(),
        (
            403,
            "Forbidden (user=viewer, verb=get, resource=nodes, subresource(s)=[proxy])\n"
                .to_string()
        )
    );
    // A certificate of another CA: the handshake fails, no HTTP answer at all.
    let stranger = TestPki::new("another-ca").client("admin", &["system:masters"]);
    let refused = SecureClient::new(&node, Some(&stranger)).get("/pods");
    assert!(refused.is_err(), "{refused:?}");
    // ... and the node keeps serving everyone else.
    assert!(client.get_ok("/healthz").is_some());

    // The read-only port keeps /pods but not the logs (405 as upstream).
    let read_only = ureq::get(&format!(
        "http://127.0.0.1:{}/containerLogs/default/hello-t-secure/main",
        node.port
    ))
    .call();
    match read_only {
        Err(ureq::Error::Status(405, _)) => {}
        other => panic!("expected 405 from the read-only port, got {other:?}"),
    }
    assert!(node.try_get("/pods").is_some());

    // The self-signed serving certificate survives a restart (the pinned client still works).
    let served = std::fs::read(node.dir.path().join("root/pki/kubelet.crt")).unwrap();
    node.restart();
    wait_for_port(&node, &client);
    assert_eq!(
        std::fs::read(node.dir.path().join("root/pki/kubelet.crt")).unwrap(),
        served
    );
    assert!(client.get_ok("/pods").is_some());
}
