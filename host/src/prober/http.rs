//! `httpGet` probes (and hooks): `GET scheme://host:port/path` from the node, to the pod IP
//! unless `host` is set, with the spec's headers plus upstream's `User-Agent: kube-probe/…` and
//! `Accept: */*`. 200–399 is success. Redirects are followed on the same host (at most 10);
//! a redirect to another host is not followed and counts as success with a warning, as
//! upstream. HTTPS skips certificate verification (upstream's `InsecureSkipVerify`).
//! Connections are never reused (upstream disables keep-alive for probes).

use super::spec::{resolve_port, ProbeSpecError};
use super::Outcome;
use k8s_openapi::api::core::v1::{Container, HTTPGetAction};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Upstream's probe user agent, with the Kubernetes API version wasmlet implements.
pub const USER_AGENT: &str = "kube-probe/1.35";
/// Upstream reads at most this much of a probe's response body.
const MAX_BODY: u64 = 10 * 1024;
/// Upstream's redirect limit for probes.
const MAX_REDIRECTS: usize = 10;

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTPS; the certificate is not verified, as upstream.
    Https,
}

/// A resolved `httpGet` action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpGet {
    /// HTTP or HTTPS.
    pub scheme: Scheme,
    /// `None`: the pod IP.
    pub host: Option<String>,
    /// Resolved from a number or the container's port name.
    pub port: u16,
    /// As given; a missing leading `/` is added when the URL is built.
    pub path: String,
    /// `httpHeaders`, sent as given (a `User-Agent` or `Accept` here replaces the default).
    pub headers: Vec<(String, String)>,
}

impl HttpGet {
    /// Resolves the spec's action (named port, scheme, headers); `field` names it in errors.
    pub fn from_spec(
        get: &HTTPGetAction,
        container: &Container,
        field: &str,
    ) -> Result<Self, ProbeSpecError> {
        let port = resolve_port(&get.port, container, &format!("{field}.port"))?;
        let scheme = match get.scheme.as_deref().unwrap_or("HTTP") {
            s if s.eq_ignore_ascii_case("http") => Scheme::Http,
            s if s.eq_ignore_ascii_case("https") => Scheme::Https,
            other => {
                return Err(ProbeSpecError::UnknownScheme {
                    container: container.name.clone(),
                    field: field.to_string(),
                    scheme: other.to_string(),
                })
            }
        };
        Ok(HttpGet {
            scheme,
            host: get.host.clone().filter(|h| !h.is_empty()),
            port,
            path: get.path.clone().unwrap_or_default(),
            headers: get
                .http_headers
                .iter()
                .flatten()
                .map(|h| (h.name.clone(), h.value.clone()))
                .collect(),
        })
    }

    /// The URL for a pod at `pod_ip`.
    pub fn url(&self, pod_ip: &str) -> String {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        let host = self.host.as_deref().unwrap_or(pod_ip);
        let path = if self.path.starts_with('/') {
            self.path.clone()
        } else {
            format!("/{}", self.path)
        };
        format!("{scheme}://{}{path}", host_port(host, self.port))
    }
}

/// `host:port`, with brackets around an IPv6 address.
pub fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// What a GET found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The status of the last response (after same-host redirects).
    pub status: u16,
    /// At most 10 KiB of its body, for messages.
    pub body: String,
    /// The redirect to another host that was not followed.
    pub foreign_redirect: Option<String>,
}

/// Runs the GET once (blocking; the async [`probe`] runs it off the executor).
pub fn get(action: &HttpGet, pod_ip: &str, timeout: Duration) -> Result<Answer, String> {
    let mut url = action.url(pod_ip);
    let first_host = host_of(&url);
    for _ in 0..=MAX_REDIRECTS {
        let mut request = agent().get(&url).timeout(timeout);
        let mut has_agent = false;
        let mut has_accept = false;
        for (name, value) in &action.headers {
            has_agent |= name.eq_ignore_ascii_case("user-agent");
            has_accept |= name.eq_ignore_ascii_case("accept");
            request = request.set(name, value);
        }
        if !has_agent {
            request = request.set("User-Agent", USER_AGENT);
        }
        if !has_accept {
            request = request.set("Accept", "*/*");
        }
        let response = match request.call() {
            Ok(response) => response,
            Err(ureq::Error::Status(_, response)) => response,
            Err(error) => return Err(format!("Get {url:?}: {error}")),
        };
        let status = response.status();
        if (300..400).contains(&status) {
            if let Some(location) = response.header("location") {
                let next = match url.parse::<url_lite::Url>() {
                    Ok(base) => base.join(location),
                    Err(_) => location.to_string(),
                };
                if host_of(&next) != first_host {
                    return Ok(Answer {
                        status,
                        body: read_body(response),
                        foreign_redirect: Some(next),
                    });
                }
                url = next;
                continue;
            }
        }
        return Ok(Answer {
            status,
            body: read_body(response),
            foreign_redirect: None,
        });
    }
    Err(format!(
        "Get {url:?}: stopped after {MAX_REDIRECTS} redirects"
    ))
}

fn read_body(response: ureq::Response) -> String {
    let mut body = Vec::new();
    let _ = std::io::Read::read_to_end(
        &mut std::io::Read::take(response.into_reader(), MAX_BODY),
        &mut body,
    );
    String::from_utf8_lossy(&body).into_owned()
}

/// The host part of an absolute URL (without port), lower-cased.
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        authority.split(':').next().unwrap_or("")
    };
    host.to_ascii_lowercase()
}

/// Minimal URL joining for `Location` headers: absolute URLs as is, `/path` against the
/// origin, anything else against the directory of the current path.
mod url_lite {
    /// An absolute URL split into origin and path.
    pub struct Url {
        origin: String,
        path: String,
    }

    impl std::str::FromStr for Url {
        type Err = ();
        fn from_str(url: &str) -> Result<Self, ()> {
            let (scheme, rest) = url.split_once("://").ok_or(())?;
            let slash = rest.find('/').unwrap_or(rest.len());
            Ok(Url {
                origin: format!("{scheme}://{}", &rest[..slash]),
                path: rest[slash..].to_string(),
            })
        }
    }

    impl Url {
        /// Where `location` (a `Location` header) points, from this URL.
        pub fn join(&self, location: &str) -> String {
            if location.contains("://") {
                location.to_string()
            } else if let Some(rest) = location.strip_prefix("//") {
                let scheme = self.origin.split("://").next().unwrap_or("http");
                format!("{scheme}://{rest}")
            } else if location.starts_with('/') {
                format!("{}{location}", self.origin)
            } else {
                let path = self.path.split(['?', '#']).next().unwrap_or("");
                let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
                format!("{}{dir}/{location}", self.origin)
            }
        }
    }
}

/// One agent for all probes: no redirects followed by ureq (see [`get`]), no pooled
/// connections, certificates not verified.
fn agent() -> &'static ureq::Agent {
    static AGENT: OnceLock<ureq::Agent> = OnceLock::new();
    AGENT.get_or_init(|| {
        ureq::AgentBuilder::new()
            .redirects(0)
            .max_idle_connections(0)
            .tls_config(Arc::new(insecure_tls()))
            .build()
    })
}

/// A TLS client that accepts any server certificate (signatures are still checked), as
/// upstream's probes and hooks do.
fn insecure_tls() -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(AnyCertificate(provider.clone()));
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("the ring provider supports TLS 1.2 and 1.3")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth()
}

#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Probes `action` once: 200–399 succeeds (a redirect to another host with a warning).
pub async fn probe(action: &HttpGet, pod_ip: &str, timeout: Duration) -> Outcome {
    let action = action.clone();
    let pod_ip = pod_ip.to_string();
    let answer = tokio::task::spawn_blocking(move || get(&action, &pod_ip, timeout)).await;
    match answer {
        Ok(Ok(answer)) => classify(&answer),
        Ok(Err(message)) => Outcome::Failure(message),
        Err(error) => Outcome::Error(format!("http probe task: {error}")),
    }
}

/// Upstream's `DoHTTPProbe` verdict.
pub fn classify(answer: &Answer) -> Outcome {
    match answer.status {
        200..=299 => Outcome::Success,
        300..=399 => Outcome::Warning(format!(
            "Probe terminated redirects, Response body: {}",
            answer.body.chars().take(256).collect::<String>()
        )),
        code => Outcome::Failure(format!("HTTP probe failed with statuscode: {code}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_hosts_and_joins() {
        let get = HttpGet {
            scheme: Scheme::Http,
            host: None,
            port: 8080,
            path: "healthz".into(),
            headers: vec![],
        };
        assert_eq!(get.url("10.0.0.1"), "http://10.0.0.1:8080/healthz");
        assert_eq!(get.url("fd00::1"), "http://[fd00::1]:8080/healthz");
        assert_eq!(host_of("http://[fd00::1]:80/x"), "fd00::1");
        assert_eq!(host_of("https://Example.com:443/x?y"), "example.com");
        let base: url_lite::Url = "http://10.0.0.1:80/a/b?q".parse().unwrap();
        assert_eq!(base.join("/c"), "http://10.0.0.1:80/c");
        assert_eq!(base.join("c"), "http://10.0.0.1:80/a/c");
        assert_eq!(base.join("http://other/"), "http://other/");
        assert_eq!(base.join("//other/x"), "http://other/x");
    }

    /// A one-shot HTTP server on 127.0.0.1 answering each connection with the next of
    /// `answers`; returns its port and the requests it saw.
    fn serve(answers: Vec<String>) -> (u16, std::sync::mpsc::Receiver<String>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (seen, requests) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for answer in answers {
                let Ok((mut stream, _)) = listener.accept() else {
                    return;
                };
                let mut buffer = [0u8; 4096];
                let n = stream.read(&mut buffer).unwrap_or(0);
                let _ = seen.send(String::from_utf8_lossy(&buffer[..n]).into_owned());
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        (port, requests)
    }

    fn response(status: &str, extra: &str) -> String {
        format!("HTTP/1.1 {status}\r\n{extra}Content-Length: 2\r\nConnection: close\r\n\r\nok")
    }

    fn action(port: u16, path: &str) -> HttpGet {
        HttpGet {
            scheme: Scheme::Http,
            host: None,
            port,
            path: path.into(),
            headers: vec![("X-Probe".into(), "yes".into())],
        }
    }

    #[test]
    fn same_host_redirects_are_followed_and_headers_sent() {
        let (port, requests) = serve(vec![
            response("302 Found", "Location: /next\r\n"),
            response("200 OK", ""),
        ]);
        let answer = get(&action(port, "/start"), "127.0.0.1", Duration::from_secs(2)).unwrap();
        assert_eq!(answer.status, 200);
        assert_eq!(classify(&answer), Outcome::Success);
        let first = requests.recv().unwrap();
        assert!(first.starts_with("GET /start HTTP/1.1"), "{first}");
        let lower = first.to_ascii_lowercase();
        assert!(lower.contains("user-agent: kube-probe/"), "{first}");
        assert!(lower.contains("x-probe: yes"), "{first}");
        assert!(requests.recv().unwrap().starts_with("GET /next "));
    }

    #[test]
    fn a_redirect_to_another_host_is_a_warning_not_followed() {
        let (port, requests) = serve(vec![response(
            "301 Moved Permanently",
            "Location: http://elsewhere.invalid/\r\n",
        )]);
        let answer = get(&action(port, "/"), "127.0.0.1", Duration::from_secs(2)).unwrap();
        assert_eq!(answer.status, 301);
        assert_eq!(
            answer.foreign_redirect.as_deref(),
            Some("http://elsewhere.invalid/")
        );
        assert!(matches!(classify(&answer), Outcome::Warning(_)));
        assert_eq!(requests.try_iter().count(), 1);
    }

    #[test]
    fn errors_and_refusals_fail() {
        let (port, _requests) = serve(vec![response("503 Service Unavailable", "")]);
        let answer = get(&action(port, "/"), "127.0.0.1", Duration::from_secs(2)).unwrap();
        assert_eq!(
            classify(&answer),
            Outcome::Failure("HTTP probe failed with statuscode: 503".into())
        );
        // Nothing listens on the port any more.
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let error = get(&action(closed, "/"), "127.0.0.1", Duration::from_secs(2)).unwrap_err();
        assert!(error.contains(&format!("127.0.0.1:{closed}")), "{error}");
    }

    #[test]
    fn https_accepts_a_self_signed_certificate_as_upstream() {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        use std::io::{Read, Write};
        let cert = CertificateDer::from_pem_slice(include_bytes!("testdata/self-signed-cert.pem"))
            .unwrap();
        let key =
            PrivateKeyDer::from_pem_slice(include_bytes!("testdata/self-signed-key.pem")).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
        let config = Arc::new(config);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (tcp, _) = listener.accept().unwrap();
            let connection = rustls::ServerConnection::new(config).unwrap();
            let mut tls = rustls::StreamOwned::new(connection, tcp);
            let mut buffer = [0u8; 2048];
            let n = tls.read(&mut buffer).unwrap();
            tls.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
                .unwrap();
            tls.conn.send_close_notify();
            let _ = tls.flush();
            String::from_utf8_lossy(&buffer[..n]).into_owned()
        });
        let get = HttpGet {
            scheme: Scheme::Https,
            ..action(port, "/secure")
        };
        assert_eq!(
            get.url("127.0.0.1"),
            format!("https://127.0.0.1:{port}/secure")
        );
        let answer = super::get(&get, "127.0.0.1", Duration::from_secs(5)).unwrap();
        assert_eq!(answer.status, 204);
        assert!(server.join().unwrap().starts_with("GET /secure HTTP/1.1"));
    }

    #[test]
    fn status_codes_as_upstream() {
        let answer = |status| Answer {
            status,
            body: String::new(),
            foreign_redirect: None,
        };
        assert_eq!(classify(&answer(200)), Outcome::Success);
        assert_eq!(classify(&answer(204)), Outcome::Success);
        assert!(matches!(classify(&answer(302)), Outcome::Warning(_)));
        assert!(matches!(classify(&answer(400)), Outcome::Failure(_)));
        assert!(matches!(classify(&answer(500)), Outcome::Failure(_)));
    }
}
