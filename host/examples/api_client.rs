//! A small static API client for the cluster tests' image: it calls the API server the way a
//! workload does, through the `kubernetes` Service (`KUBERNETES_SERVICE_HOST/PORT`) with the
//! projected service-account token and CA of the default `kube-api-access` volume, and prints
//! the HTTP status and body. `api_client PATH` GETs PATH (default: the pods of its own
//! namespace); it exits 0 on 200.

use std::sync::Arc;

const ACCOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

fn main() {
    match run() {
        Ok(200) => {}
        Ok(status) => std::process::exit(i32::from(status / 100)),
        Err(error) => {
            eprintln!("api_client: {error}");
            std::process::exit(1);
        }
    }
}

fn run() -> Result<u16, String> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let read = |name: &str| {
        std::fs::read_to_string(format!("{ACCOUNT}/{name}"))
            .map_err(|e| format!("{ACCOUNT}/{name}: {e}"))
    };
    let token = read("token")?;
    let namespace = read("namespace")?;
    let host = std::env::var("KUBERNETES_SERVICE_HOST")
        .map_err(|_| "KUBERNETES_SERVICE_HOST is not set".to_string())?;
    let port = std::env::var("KUBERNETES_SERVICE_PORT").unwrap_or_else(|_| "443".into());
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| format!("/api/v1/namespaces/{}/pods", namespace.trim()));
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(format!("{ACCOUNT}/ca.crt"))
        .map_err(|e| format!("ca.crt: {e}"))?
    {
        roots
            .add(cert.map_err(|e| format!("ca.crt: {e}"))?)
            .map_err(|e| format!("ca.crt: {e}"))?;
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let agent = ureq::AgentBuilder::new().tls_config(Arc::new(tls)).build();
    let url = format!("https://{host}:{port}{path}");
    let (status, body) = match agent
        .get(&url)
        .set("Authorization", &format!("Bearer {}", token.trim()))
        .call()
    {
        Ok(response) => (
            response.status(),
            response.into_string().unwrap_or_default(),
        ),
        Err(ureq::Error::Status(status, response)) => {
            (status, response.into_string().unwrap_or_default())
        }
        Err(error) => return Err(format!("GET {url}: {error}")),
    };
    println!("{status}");
    println!("{body}");
    Ok(status)
}
