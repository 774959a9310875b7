//! Query parsing, name resolution without a runtime, and the proxy against a scripted
//! streaming server on loopback. The real containerd path is in tests/integration/streaming.rs.

use super::options::{self, OptionsError};
use super::proxy::{self, ActiveStreams};
use super::*;
use crate::cri::StreamOptions;
use crate::status::StatusManager;
use axum::body::Body;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;

#[test]
fn stream_flags_as_upstream_reads_them() {
    let parsed = options::stream_options(Some("input=1&output=1&error=1")).unwrap();
    assert_eq!(
        parsed,
        StreamOptions {
            stdin: true,
            stdout: true,
            stderr: true,
            tty: false
        }
    );
    // A terminal has no separate stderr: dropped, not refused.
    let parsed = options::stream_options(Some("output=1&error=1&tty=1")).unwrap();
    assert!(parsed.tty && parsed.stdout && !parsed.stderr);
    // The API's PodExecOptions names are understood too.
    let parsed = options::stream_options(Some("stdin=true&stdout=true")).unwrap();
    assert!(parsed.stdin && parsed.stdout && !parsed.stderr);
    // Only "1" / "true" set a flag, and the first value counts (Go's FormValue).
    assert_eq!(
        options::stream_options(Some("output=0&error=yes")),
        Err(OptionsError::NoStreams)
    );
    assert!(
        !options::stream_options(Some("output=1&input=0&input=1"))
            .unwrap()
            .stdin
    );
    assert_eq!(options::stream_options(None), Err(OptionsError::NoStreams));
}

#[test]
fn exec_command_is_every_command_parameter_in_order() {
    let parsed =
        options::exec_options(Some("command=sh&command=-c&command=echo%20a%26b&output=1")).unwrap();
    assert_eq!(parsed.command, ["sh", "-c", "echo a&b"]);
    assert_eq!(
        options::exec_options(Some("output=1")),
        Err(OptionsError::NoCommand)
    );
}

#[test]
fn run_command_splits_cmd_at_spaces() {
    assert_eq!(
        options::run_command(Some("cmd=echo+hello%20world")).unwrap(),
        ["echo", "hello", "world"]
    );
    assert_eq!(
        options::run_command(Some("cmd=")),
        Err(OptionsError::NoRunCommand)
    );
    assert_eq!(options::run_command(None), Err(OptionsError::NoRunCommand));
}

#[test]
fn port_forward_ports_only_for_websocket() {
    assert_eq!(
        options::port_forward_ports(None, false).unwrap(),
        Vec::<i32>::new()
    );
    assert_eq!(
        options::port_forward_ports(Some("port=80,8080&port=9000"), true).unwrap(),
        [80, 8080, 9000]
    );
    assert_eq!(
        options::port_forward_ports(None, true),
        Err(OptionsError::NoPort)
    );
    assert_eq!(
        options::port_forward_ports(Some("port="), true),
        Err(OptionsError::EmptyPort)
    );
    for bad in ["port=0", "port=65536", "port=80,x", "port=-1"] {
        assert!(
            matches!(
                options::port_forward_ports(Some(bad), true),
                Err(OptionsError::BadPort(_))
            ),
            "{bad}"
        );
    }
}

#[test]
fn upgrade_and_websocket_detection() {
    let headers = |pairs: &[(&'static str, &'static str)]| {
        let mut map = axum::http::HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, axum::http::HeaderValue::from_static(v));
        }
        map
    };
    let spdy = headers(&[("connection", "Upgrade"), ("upgrade", "SPDY/3.1")]);
    assert!(proxy::is_upgrade_request(&spdy) && !proxy::is_websocket_request(&spdy));
    let ws = headers(&[
        ("connection", "keep-alive, upgrade"),
        ("upgrade", "WebSocket"),
    ]);
    assert!(proxy::is_upgrade_request(&ws) && proxy::is_websocket_request(&ws));
    let plain = headers(&[("upgrade", "websocket")]);
    assert!(!proxy::is_upgrade_request(&plain) && !proxy::is_websocket_request(&plain));
}

/// A state over a runtime that is never reached: every case here is refused before CRI.
fn state_with(pods: &[Pod]) -> StreamingState {
    let store = Arc::new(StatusStore::default());
    let manager = StatusManager::new(store.clone(), Vec::new());
    for pod in pods {
        manager.set_status(pod, Default::default());
    }
    let cri = CriClient::connect("/nonexistent/wasmlet-test.sock", Duration::from_secs(1))
        .expect("a lazy client");
    StreamingState::new(cri, store)
}

fn pod(namespace: &str, name: &str, uid: &str, containers: &[&str]) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"namespace": namespace, "name": name, "uid": uid},
        "spec": {"containers": containers.iter().map(|c| serde_json::json!({"name": c})).collect::<Vec<_>>()},
    }))
    .expect("a pod")
}

async fn call(router: &Router, method: &str, uri: &str) -> (StatusCode, String) {
    let request = axum::http::Request::builder()
        .method(method)
        .uri(uri)
        .header("connection", "Upgrade")
        .header("upgrade", "SPDY/3.1")
        .body(Body::empty())
        .expect("a request");
    let response = router.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .expect("a body");
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn names_that_do_not_resolve_are_404_with_a_message() {
    let router = router(state_with(&[pod("ns", "web", "uid-1", &["main"])]));
    let cases = [
        (
            "GET",
            "/exec/ns/nope/main?command=true&output=1",
            "pod ns/nope does not exist",
        ),
        (
            "POST",
            "/exec/ns/web/other?command=true&output=1",
            "container \"other\" not found in pod ns/web",
        ),
        (
            "GET",
            "/exec/ns/web/uid-2/main?command=true&output=1",
            "pod ns/web with UID uid-2 not found",
        ),
        (
            "POST",
            "/attach/other/web/main?output=1",
            "pod other/web does not exist",
        ),
        (
            "GET",
            "/portForward/ns/web/uid-9",
            "pod ns/web with UID uid-9 not found",
        ),
        (
            "POST",
            "/run/ns/nope/main?cmd=true",
            "pod ns/nope does not exist",
        ),
        (
            "POST",
            "/run/ns/web/uid-1/other?cmd=true",
            "container \"other\" not found",
        ),
    ];
    for (method, uri, message) in cases {
        let (status, body) = call(&router, method, uri).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {uri}: {body}");
        assert!(body.contains(message), "{method} {uri}: {body}");
    }
}

#[tokio::test]
async fn bad_queries_are_400_and_wrong_methods_405() {
    let router = router(state_with(&[pod("ns", "web", "uid-1", &["main"])]));
    let (status, body) = call(&router, "GET", "/exec/ns/web/main?command=true").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body.contains("at least 1 of stdin, stdout, stderr"),
        "{body}"
    );
    let (status, _) = call(&router, "GET", "/exec/ns/web/main?output=1").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = call(&router, "POST", "/run/ns/web/main").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = call(&router, "GET", "/run/ns/web/main?cmd=true").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    let (status, _) = call(&router, "PUT", "/exec/ns/web/main?command=true&output=1").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
}

/// A streaming server that takes one request, records its head, and answers `answer`; after
/// a 101 it echoes until the proxy closes, then reports the bytes it saw.
async fn scripted_backend(
    answer: &'static str,
) -> (String, tokio::sync::oneshot::Receiver<(String, usize)>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (done, report) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("accept");
        let head = read_head(&mut socket).await;
        socket.write_all(answer.as_bytes()).await.expect("answer");
        let mut echoed = 0;
        if answer.starts_with("HTTP/1.1 101") {
            let mut buf = [0u8; 1024];
            loop {
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        echoed += n;
                        if socket.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                }
            }
        }
        let _ = done.send((head, echoed));
    });
    (format!("http://{addr}/exec/token-1?extra=1"), report)
}

async fn read_head(socket: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 << 10 {
        match socket.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Serves a router whose one route proxies to `url`, as the streaming handlers do.
async fn proxy_server(url: String, active: Arc<ActiveStreams>) -> std::net::SocketAddr {
    let app = Router::new().route(
        "/stream",
        axum::routing::any(move |request: Request| {
            let url = url.clone();
            let active = active.clone();
            async move { proxy::proxy(request, &url, active).await }
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

#[tokio::test]
async fn upgrade_is_relayed_and_spliced_and_a_closed_client_frees_both_sides() {
    let (url, report) = scripted_backend(
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\
         X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n",
    )
    .await;
    let active = Arc::new(ActiveStreams::default());
    let addr = proxy_server(url, active.clone()).await;
    let mut client = TcpStream::connect(addr).await.expect("connect");
    client
        .write_all(
            b"POST /stream HTTP/1.1\r\nHost: kubelet\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\
              X-Stream-Protocol-Version: v4.channel.k8s.io\r\nX-Stream-Protocol-Version: v3.channel.k8s.io\r\n\
              Authorization: Bearer secret\r\n\r\n",
        )
        .await
        .expect("request");
    let head = read_head(&mut client).await.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(
        head.contains("x-stream-protocol-version: v4.channel.k8s.io"),
        "{head}"
    );
    assert!(head.contains("upgrade: spdy/3.1"), "{head}");
    client.write_all(b"ping").await.expect("write");
    let mut buf = [0u8; 4];
    client.read_exact(&mut buf).await.expect("echo");
    assert_eq!(&buf, b"ping");
    assert_eq!(active.get(), 1);
    drop(client);
    let (backend_head, echoed) = tokio::time::timeout(Duration::from_secs(5), report)
        .await
        .expect("the runtime side is closed when the client goes")
        .expect("a report");
    assert_eq!(echoed, 4);
    let lower = backend_head.to_ascii_lowercase();
    assert!(
        lower.starts_with("post /exec/token-1?extra=1 http/1.1\r\n"),
        "{backend_head}"
    );
    assert!(
        lower.contains("x-stream-protocol-version: v4.channel.k8s.io\r\n"),
        "{backend_head}"
    );
    assert!(
        lower.contains("x-stream-protocol-version: v3.channel.k8s.io\r\n"),
        "{backend_head}"
    );
    assert!(lower.contains("upgrade: spdy/3.1\r\n"), "{backend_head}");
    assert!(
        !lower.contains("authorization"),
        "credentials stay here: {backend_head}"
    );
    assert!(!lower.contains("host: kubelet"), "{backend_head}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while active.get() != 0 {
        assert!(
            Instant::now() < deadline,
            "the splice task outlived both sides"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_refusal_is_relayed_with_status_and_body() {
    let (url, _report) =
        scripted_backend("HTTP/1.1 403 Forbidden\r\nContent-Length: 4\r\nX-Why: test\r\n\r\nnope")
            .await;
    let addr = proxy_server(url, Arc::default()).await;
    let mut client = TcpStream::connect(addr).await.expect("connect");
    client
        .write_all(
            b"GET /stream HTTP/1.1\r\nHost: kubelet\r\nConnection: Upgrade, close\r\nUpgrade: websocket\r\n\r\n",
        )
        .await
        .expect("request");
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), client.read_to_string(&mut answer))
        .await
        .expect("an answer")
        .expect("readable");
    let lower = answer.to_ascii_lowercase();
    assert!(lower.starts_with("http/1.1 403"), "{answer}");
    assert!(lower.contains("x-why: test"), "{answer}");
    assert!(answer.ends_with("\r\n\r\nnope"), "{answer}");
}

#[tokio::test]
async fn an_unreachable_streaming_server_is_a_500_naming_it() {
    let closed = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/exec/x", closed.local_addr().expect("addr"));
    drop(closed);
    let addr = proxy_server(url, Arc::default()).await;
    let mut client = TcpStream::connect(addr).await.expect("connect");
    client
        .write_all(b"GET /stream HTTP/1.1\r\nHost: k\r\nConnection: Upgrade, close\r\nUpgrade: SPDY/3.1\r\n\r\n")
        .await
        .expect("request");
    let mut answer = String::new();
    client.read_to_string(&mut answer).await.expect("readable");
    assert!(answer.starts_with("HTTP/1.1 500"), "{answer}");
    assert!(
        answer.contains("connecting to the runtime's streaming server"),
        "{answer}"
    );
}
