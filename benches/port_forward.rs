//! Where a port-forward's throughput goes (issue 16's target: ≥ 80 % of a direct connection).
//! One pod serves a blob from memory with busybox `httpd`; the same download is timed, with
//! the same Rust reader, over three paths on the real containerd:
//!
//! - direct: TCP to the pod IP;
//! - containerd: a WebSocket (`v4.channel.k8s.io`) straight to the one-time URL containerd's
//!   CRI streaming server gives for `PortForward` — the runtime's share, without wasmlet;
//! - wasmlet: the same WebSocket to wasmlet's secure port (TLS, a `system:masters` client
//!   certificate), which authorizes, asks CRI for the URL and splices the stream to it.
//!
//! `kubectl port-forward` through the API server is in `scripts/bench-vs-kubelet.py`.
//! `cargo bench --bench port_forward` (env `BENCH_BLOB_MIB`, default 128; `BENCH_ROUNDS`, 5).

use wasmlet_test_support::{bench as support, harness, secure_port};

use futures::{SinkExt, StreamExt};
use secure_port::{secure_node, tls_config, TestPki};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{env_count, percentile};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use wasmlet::cri::CriClient;

const PORT: u16 = 8080;
const REQUEST: &[u8] = b"GET /blob HTTP/1.0\r\nHost: pod\r\n\r\n";

fn server_pod(blob_mib: usize) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: blob}}\nspec:\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: web\n    image: docker.io/library/busybox:local\n    command: [sh, -c, 'dd if=/dev/zero of=/www/blob bs=1M count={blob_mib} 2>/dev/null && exec httpd -f -p {PORT} -h /www']\n    ports: [{{containerPort: {PORT}}}]\n    readinessProbe: {{tcpSocket: {{port: {PORT}}}, periodSeconds: 1}}\n    volumeMounts: [{{name: www, mountPath: /www}}]\n  volumes:\n  - {{name: www, emptyDir: {{medium: Memory}}}}\n"
    )
}

/// MiB/s of reading `want` bytes of the HTTP answer on `stream` after sending the request.
async fn over_tcp(address: &str, want: usize) -> f64 {
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect to the pod");
    let started = Instant::now();
    stream.write_all(REQUEST).await.expect("request");
    let mut buffer = vec![0u8; 64 << 10];
    let mut received = 0;
    while received < want {
        let n = stream.read(&mut buffer).await.expect("read");
        assert!(n > 0, "the pod closed after {received} bytes");
        received += n;
    }
    mib_per_s(received, started.elapsed())
}

/// The same download over a port-forward WebSocket on `stream` (already connected, TLS or not).
async fn over_websocket<S>(stream: S, url: &str, want: usize) -> f64
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut request = url.into_client_request().expect("request");
    request.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        "v4.channel.k8s.io".parse().expect("header"),
    );
    let (mut ws, _) = tokio_tungstenite::client_async(request, stream)
        .await
        .expect("WebSocket handshake");
    // Each channel (0 data, 1 error) first carries its port, two bytes.
    let mut announced = 0;
    while announced < 2 {
        match ws.next().await.expect("port frame").expect("frame") {
            Message::Binary(_) => announced += 1,
            Message::Close(frame) => panic!("closed before the ports: {frame:?}"),
            _ => {}
        }
    }
    let started = Instant::now();
    let mut first = vec![0u8];
    first.extend_from_slice(REQUEST);
    ws.send(Message::Binary(first.into())).await.expect("send");
    let mut received = 0;
    while received < want {
        match ws.next().await.expect("data frame").expect("frame") {
            Message::Binary(data) => match data.first() {
                Some(0) => received += data.len() - 1,
                Some(1) if data.len() > 1 => panic!(
                    "port-forward error: {}",
                    String::from_utf8_lossy(&data[1..])
                ),
                _ => {}
            },
            Message::Close(frame) => panic!("closed after {received} bytes: {frame:?}"),
            _ => {}
        }
    }
    mib_per_s(received, started.elapsed())
}

fn mib_per_s(bytes: usize, took: Duration) -> f64 {
    bytes as f64 / took.as_secs_f64() / f64::from(1 << 20)
}

fn main() {
    let blob_mib = env_count("BENCH_BLOB_MIB", 128);
    let rounds = env_count("BENCH_ROUNDS", 5);
    let want = blob_mib << 20;
    let pki = TestPki::new("bench-port-forward");
    let node = secure_node("bench-pf", &pki);
    let admin = pki.client("admin", &["system:masters"]);
    node.write_manifest("blob.yaml", &server_pod(blob_mib));
    let pod = node.wait_for("the blob server ready", Duration::from_secs(120), |n| {
        let pod = n.pod("blob")?;
        let ready = pod["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        ready.then_some(pod)
    });
    let pod_ip = pod["status"]["podIP"].as_str().expect("pod IP").to_string();
    let pod_name = pod["metadata"]["name"].as_str().expect("name").to_string();
    let sandbox = node.sandboxes(Some("blob"))[0].id.clone();
    let secure = format!("127.0.0.1:{}", node.secure_port.expect("the secure port"));
    let tls = tokio_rustls::TlsConnector::from(Arc::new(tls_config(&node, Some(&admin))));

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let cri = {
        let _guard = runtime.enter();
        CriClient::connect(harness::cri_socket(), Duration::from_secs(30)).expect("CRI")
    };
    let (mut direct, mut containerd, mut wasmlet) = (Vec::new(), Vec::new(), Vec::new());
    runtime.block_on(async {
        // One round of each first, untimed: caches and connections warm.
        for round in 0..=rounds {
            let d = over_tcp(&format!("{pod_ip}:{PORT}"), want).await;
            let url = cri
                .port_forward(&sandbox, vec![i32::from(PORT)])
                .await
                .expect("CRI PortForward");
            let ws_url = url.replacen("http://", "ws://", 1);
            let host = ws_url
                .trim_start_matches("ws://")
                .split('/')
                .next()
                .expect("host")
                .to_string();
            let tcp = tokio::net::TcpStream::connect(&host)
                .await
                .expect("containerd's streaming server");
            let c = over_websocket(tcp, &ws_url, want).await;
            let tcp = tokio::net::TcpStream::connect(&secure)
                .await
                .expect("wasmlet's secure port");
            let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
            let stream = tls.connect(name, tcp).await.expect("TLS");
            let w = over_websocket(
                stream,
                &format!("wss://{secure}/portForward/default/{pod_name}?port={PORT}"),
                want,
            )
            .await;
            if round > 0 {
                direct.push(d);
                containerd.push(c);
                wasmlet.push(w);
            }
        }
    });
    let median = |samples: &mut Vec<f64>| percentile(samples, 50.0);
    let (d, c, w) = (
        median(&mut direct),
        median(&mut containerd),
        median(&mut wasmlet),
    );
    println!(
        "## port-forward of a {blob_mib} MiB download, median of {rounds} rounds (interleaved)"
    );
    println!("| path | MiB/s | share of direct |");
    println!("|---|---|---|");
    println!("| direct: TCP to the pod IP | {d:.1} | 100 % |");
    println!(
        "| containerd's streaming server, WebSocket straight to its URL | {c:.1} | {:.1} % |",
        100.0 * c / d
    );
    println!(
        "| wasmlet's secure port (TLS) spliced to containerd | {w:.1} | {:.1} % |",
        100.0 * w / d
    );
    println!(
        "\nwasmlet / containerd alone: {:.2}",
        if c > 0.0 { w / c } else { 0.0 }
    );
    node.remove_manifest("blob.yaml");
}
