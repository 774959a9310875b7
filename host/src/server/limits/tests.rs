use super::*;
use axum::routing::get;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn start(limits: Limits) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let router = Router::new().route("/", get(|| async { "ok" }));
    tokio::spawn(serve_plain(listener, router, limits));
    addr
}

/// Sends one keep-alive request and reads its answer's first bytes.
async fn ask(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("request");
    let mut buf = [0u8; 256];
    let n = stream.read(&mut buf).await.expect("answer");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Whether the server closes `stream` within `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 64];
    matches!(
        tokio::time::timeout(within, stream.read(&mut buf)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

#[tokio::test]
async fn connections_past_the_cap_wait_until_one_ends() {
    let addr = start(Limits {
        max_connections: 2,
        ..Limits::default()
    })
    .await;
    let mut first = TcpStream::connect(addr).await.expect("connect");
    let mut second = TcpStream::connect(addr).await.expect("connect");
    assert!(ask(&mut first).await.starts_with("HTTP/1.1 200"));
    assert!(ask(&mut second).await.starts_with("HTTP/1.1 200"));
    let mut third = TcpStream::connect(addr)
        .await
        .expect("the kernel's backlog takes it");
    let waiting = tokio::time::timeout(Duration::from_millis(300), ask(&mut third)).await;
    assert!(
        waiting.is_err(),
        "a third connection was served past the cap"
    );
    drop(first);
    // The request already sent is read once the third connection is accepted.
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(5), third.read(&mut buf))
        .await
        .expect("served once a connection ended")
        .expect("read");
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
}

#[tokio::test]
async fn silent_and_idle_connections_are_closed() {
    let addr = start(Limits {
        header_read_timeout: Duration::from_millis(200),
        ..Limits::default()
    })
    .await;
    let mut silent = TcpStream::connect(addr).await.expect("connect");
    assert!(closed_within(&mut silent, Duration::from_secs(3)).await);
    let mut idle = TcpStream::connect(addr).await.expect("connect");
    assert!(ask(&mut idle).await.starts_with("HTTP/1.1 200"));
    assert!(
        closed_within(&mut idle, Duration::from_secs(3)).await,
        "a kept-alive connection outlived the header timeout"
    );
}

#[tokio::test]
async fn oversized_headers_are_refused() {
    let addr = start(Limits::default()).await;
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let huge = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(100 * 1024)
    );
    // The server may close before all is written: either way, no 200.
    let _ = stream.write_all(huge.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(!answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Only that connection ended.
    let mut next = TcpStream::connect(addr).await.expect("connect");
    assert!(ask(&mut next).await.starts_with("HTTP/1.1 200"));
}
