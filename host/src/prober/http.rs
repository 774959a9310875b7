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

/// Why a GET got no answer; the message is the probe's (or hook's) failure message, as
/// upstream words it.
#[derive(Debug, thiserror::Error)]
pub enum GetError {
    /// The request failed before any status (connection refused, timeout, TLS).
    #[error("Get {url:?}: {source}")]
    Request {
        /// The URL requested.
        url: String,
        /// What ureq reported.
        #[source]
        source: Box<ureq::Error>,
    },
    /// Same-host redirects went on past the limit (10, as upstream).
    #[error("Get {url:?}: stopped after {MAX_REDIRECTS} redirects")]
    TooManyRedirects {
        /// The last URL redirected to.
        url: String,
    },
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
pub fn get(action: &HttpGet, pod_ip: &str, timeout: Duration) -> Result<Answer, GetError> {
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
            Err(error) => {
                return Err(GetError::Request {
                    url,
                    source: Box::new(error),
                })
            }
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
    Err(GetError::TooManyRedirects { url })
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
        Ok(Err(error)) => Outcome::Failure(error.to_string()),
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
mod tests;
