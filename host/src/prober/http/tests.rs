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
    assert!(
        error.to_string().contains(&format!("127.0.0.1:{closed}")),
        "{error}"
    );
}

#[test]
fn https_accepts_a_self_signed_certificate_as_upstream() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::io::{Read, Write};
    let cert =
        CertificateDer::from_pem_slice(include_bytes!("../testdata/self-signed-cert.pem")).unwrap();
    let key =
        PrivateKeyDer::from_pem_slice(include_bytes!("../testdata/self-signed-key.pem")).unwrap();
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
