//! The streaming endpoints (`/exec`, `/attach`, `/portForward`, `/run`) through containerd's
//! CRI streaming server. A real node runs the pods; the streaming router is served here on a
//! plain-HTTP loopback listener over a store holding the node's pods (the secure port, which
//! mounts the same router, is tested in the cluster tests), and driven over WebSocket, as
//! containerd's streaming server speaks `v4.channel.k8s.io`.

use crate::harness::{cri_socket, Node};
use futures::{SinkExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use std::collections::HashMap;
use std::future::IntoFuture;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;
use wasmlet::cri::CriClient;
use wasmlet::status::{StatusManager, StatusStore};
use wasmlet::streaming::{router, StreamingState};

const IMAGE: &str = "docker.io/library/busybox:local";

fn pods_yaml() -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: stream
spec:
  containers:
  - name: shell
    image: {IMAGE}
    command: [sleep, '3600']
  - name: echo
    image: {IMAGE}
    stdin: true
    command: [cat]
  - name: web
    image: {IMAGE}
    command: [sh, -c, 'mkdir -p /www && echo hello-from-httpd > /www/index.html && exec httpd -f -p 8080 -h /www']
"#
    )
}

fn finished_yaml() -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: finished
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: {IMAGE}
    command: ['true']
"#
    )
}

/// The streaming router on loopback, over the node's pods as its `/pods` shows them.
struct Streaming {
    runtime: tokio::runtime::Runtime,
    addr: SocketAddr,
    state: StreamingState,
    /// `default/<pod>-<node>`.
    pod: String,
    uid: String,
}

impl Streaming {
    fn start(node: &Node) -> Streaming {
        let pods: Vec<Pod> =
            serde_json::from_value(node.get_json("/pods")["items"].clone()).expect("pods");
        let store = Arc::new(StatusStore::default());
        let manager = StatusManager::new(store.clone(), Vec::new());
        for pod in &pods {
            manager.set_status(pod, pod.status.clone().unwrap_or_default());
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let cri = {
            let _guard = runtime.enter();
            CriClient::connect(cri_socket(), Duration::from_secs(60)).expect("CRI client")
        };
        let state = StreamingState::new(cri, store);
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        runtime.spawn(axum::serve(listener, router(state.clone())).into_future());
        let name = format!("stream-{}", node.name);
        let uid = pods
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(&name))
            .and_then(|p| p.metadata.uid.clone())
            .expect("the stream pod");
        Streaming {
            runtime,
            addr,
            state,
            pod: format!("default/{name}"),
            uid,
        }
    }

    fn url(&self, scheme: &str, path: &str, query: &[(&str, &str)]) -> String {
        let query = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(query)
            .finish();
        format!("{scheme}://{}{path}?{query}", self.addr)
    }

    /// A plain HTTP exchange with `Connection: Upgrade, close`: the status line and body.
    fn raw(&self, method: &str, path_and_query: &str, upgrade: &str) -> (u16, String) {
        let mut socket = std::net::TcpStream::connect(self.addr).expect("connect");
        socket
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        write!(
            socket,
            "{method} {path_and_query} HTTP/1.1\r\nHost: kubelet\r\nConnection: Upgrade, close\r\n\
             Upgrade: {upgrade}\r\nContent-Length: 0\r\n\r\n"
        )
        .expect("request");
        let mut answer = String::new();
        let _ = socket.read_to_string(&mut answer);
        let status = answer
            .get(9..12)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {answer:?}"));
        let body = answer
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        (status, body)
    }

    fn wait_idle(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.state.active_streams() != 0 {
            assert!(
                Instant::now() < deadline,
                "{} streams still proxied after their clients left",
                self.state.active_streams()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(url: &str, protocol: &'static str) -> Ws {
    let mut request = url.into_client_request().expect("a ws request");
    request
        .headers_mut()
        .insert("Sec-WebSocket-Protocol", HeaderValue::from_static(protocol));
    let (ws, response) = tokio_tungstenite::connect_async(request)
        .await
        .unwrap_or_else(|e| panic!("websocket to {url}: {e}"));
    assert_eq!(
        response
            .headers()
            .get("sec-websocket-protocol")
            .and_then(|v| v.to_str().ok()),
        Some(protocol)
    );
    ws
}

/// Reads channel messages until the server closes, up to `until` matching the output so far.
async fn collect(
    ws: &mut Ws,
    until: impl Fn(&HashMap<u8, Vec<u8>>) -> bool,
) -> HashMap<u8, Vec<u8>> {
    let mut channels: HashMap<u8, Vec<u8>> = HashMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if until(&channels) {
            return channels;
        }
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Ok(Some(Ok(Message::Binary(data)))) => {
                if let Some((channel, payload)) = data.split_first() {
                    channels
                        .entry(*channel)
                        .or_default()
                        .extend_from_slice(payload);
                }
            }
            Ok(Some(Ok(Message::Close(_)))) | Ok(None) | Ok(Some(Err(_))) => return channels,
            Ok(Some(Ok(_))) => {}
            Err(_) => panic!("no end of stream within 30 s; so far: {channels:?}"),
        }
    }
}

fn text(channels: &HashMap<u8, Vec<u8>>, channel: u8) -> String {
    String::from_utf8_lossy(
        channels
            .get(&channel)
            .map(Vec::as_slice)
            .unwrap_or_default(),
    )
    .into_owned()
}

fn exit_status(channels: &HashMap<u8, Vec<u8>>) -> serde_json::Value {
    serde_json::from_str(&text(channels, 3))
        .unwrap_or_else(|e| panic!("no status on the error channel ({e}): {channels:?}"))
}

#[test]
fn exec_attach_port_forward_and_run_through_containerd() {
    let node = Node::start("t-stream");
    node.write_manifest("stream.yaml", &pods_yaml());
    node.write_manifest("finished.yaml", &finished_yaml());
    node.wait_for(
        "all three containers running",
        Duration::from_secs(60),
        |n| {
            n.pod("stream").filter(|p| {
                p["status"]["containerStatuses"]
                    .as_array()
                    .is_some_and(|cs| {
                        cs.len() == 3 && cs.iter().all(|c| !c["state"]["running"].is_null())
                    })
            })
        },
    );
    node.wait_phase("finished", "Succeeded", Duration::from_secs(60));
    let s = Streaming::start(&node);
    let pod = s.pod.clone();

    // /run: the command's output; a failing command is a 500 with upstream's message.
    let (status, body) = s.raw(
        "POST",
        &format!("/run/{pod}/shell?cmd=echo+hello+run"),
        "none",
    );
    assert_eq!((status, body.as_str()), (200, "hello run\n"));
    let (status, body) = s.raw(
        "POST",
        &format!("/run/{pod}/{}/shell?cmd=false", s.uid),
        "none",
    );
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("command 'false' exited with 1"), "{body}");

    // Names that do not resolve, and a container that is not running.
    let exec_query = "command=true&output=1";
    let cases = [
        (
            format!("/exec/default/nope/shell?{exec_query}"),
            404,
            "does not exist",
        ),
        (
            format!("/exec/{pod}/nope?{exec_query}"),
            404,
            "not found in pod",
        ),
        (
            format!("/exec/{pod}/not-the-uid/shell?{exec_query}"),
            404,
            "with UID not-the-uid",
        ),
        (
            format!("/portForward/{pod}/not-the-uid"),
            404,
            "with UID not-the-uid",
        ),
        (
            format!("/exec/default/finished-{}/main?{exec_query}", node.name),
            500,
            "is not running",
        ),
    ];
    for (path, code, message) in &cases {
        let (status, body) = s.raw("GET", path, "SPDY/3.1");
        assert_eq!(status, *code, "{path}: {body}");
        assert!(body.contains(message), "{path}: {body}");
    }
    let (status, body) = s.raw("POST", "/run/default/nope/shell?cmd=true", "none");
    assert_eq!(status, 404, "{body}");

    // SPDY: the upgrade is relayed with the protocol version containerd chose.
    {
        let mut socket = std::net::TcpStream::connect(s.addr).expect("connect");
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        write!(
            socket,
            "POST /exec/{pod}/shell?command=true&output=1 HTTP/1.1\r\nHost: kubelet\r\n\
             Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\
             X-Stream-Protocol-Version: v3.channel.k8s.io\r\n\r\n"
        )
        .expect("request");
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && socket.read(&mut byte).unwrap_or(0) == 1 {
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
        assert!(head.starts_with("http/1.1 101"), "{head}");
        assert!(
            head.contains("x-stream-protocol-version: v4.channel.k8s.io"),
            "{head}"
        );
        assert!(head.contains("upgrade: spdy/3.1"), "{head}");
    }
    s.wait_idle();

    s.runtime.block_on(async {
        // exec: stdout, then the v4 status on the error channel.
        let url = s.url(
            "ws",
            &format!("/exec/{pod}/shell"),
            &[
                ("command", "echo"),
                ("command", "hello"),
                ("output", "1"),
                ("error", "1"),
            ],
        );
        let mut ws = connect(&url, "v4.channel.k8s.io").await;
        let out = collect(&mut ws, |_| false).await;
        assert_eq!(text(&out, 1), "hello\n", "{out:?}");
        assert_eq!(exit_status(&out)["status"], "Success", "{out:?}");

        // The exit status of a failing command.
        let url = s.url(
            "ws",
            &format!("/exec/{pod}/{}/shell", s.uid),
            &[
                ("command", "sh"),
                ("command", "-c"),
                ("command", "echo oops >&2; exit 7"),
                ("output", "1"),
                ("error", "1"),
            ],
        );
        let mut ws = connect(&url, "v4.channel.k8s.io").await;
        let out = collect(&mut ws, |_| false).await;
        assert_eq!(text(&out, 2), "oops\n", "{out:?}");
        let st = exit_status(&out);
        assert_eq!(st["status"], "Failure", "{st}");
        assert_eq!(st["reason"], "NonZeroExitCode", "{st}");
        assert_eq!(st["details"]["causes"][0]["reason"], "ExitCode", "{st}");
        assert_eq!(st["details"]["causes"][0]["message"], "7", "{st}");

        // stdin round trip.
        let url = s.url(
            "ws",
            &format!("/exec/{pod}/shell"),
            &[
                ("command", "sh"),
                ("command", "-c"),
                ("command", "read line; echo got:$line"),
                ("input", "1"),
                ("output", "1"),
            ],
        );
        let mut ws = connect(&url, "v4.channel.k8s.io").await;
        ws.send(Message::binary(b"\x00ping\n".to_vec()))
            .await
            .expect("stdin");
        let out = collect(&mut ws, |_| false).await;
        assert_eq!(text(&out, 1), "got:ping\n", "{out:?}");

        // An interactive terminal, as `kubectl exec -it`: a resize, then input typed into a
        // shell whose answer differs from the terminal's echo of it.
        let url = s.url(
            "ws",
            &format!("/exec/{pod}/shell"),
            &[
                ("command", "sh"),
                ("input", "1"),
                ("output", "1"),
                ("tty", "1"),
            ],
        );
        let mut ws = connect(&url, "v4.channel.k8s.io").await;
        ws.send(Message::binary(
            b"\x04{\"Width\":91,\"Height\":37}".to_vec(),
        ))
        .await
        .expect("resize");
        // The runtime applies a resize on its own goroutine.
        tokio::time::sleep(Duration::from_millis(300)).await;
        ws.send(Message::binary(
            b"\x00echo size=$(stty size) tty=$(tty) sum=$((6*7))\n".to_vec(),
        ))
        .await
        .expect("stdin");
        let out = collect(&mut ws, |c| text(c, 1).contains("sum=42")).await;
        let screen = text(&out, 1);
        assert!(screen.contains("size=37 91 tty=/dev/pts/"), "{screen:?}");
        ws.send(Message::binary(b"\x00exit 5\n".to_vec()))
            .await
            .expect("stdin");
        let out = collect(&mut ws, |_| false).await;
        assert_eq!(
            exit_status(&out)["details"]["causes"][0]["message"],
            "5",
            "{out:?}"
        );

        // attach: what goes to cat's stdin comes back on its stdout.
        let url = s.url(
            "ws",
            &format!("/attach/{pod}/echo"),
            &[("input", "1"), ("output", "1")],
        );
        let mut ws = connect(&url, "v4.channel.k8s.io").await;
        ws.send(Message::binary(b"\x00attached\n".to_vec()))
            .await
            .expect("stdin");
        let out = collect(&mut ws, |c| text(c, 1).contains("attached\n")).await;
        assert_eq!(text(&out, 1), "attached\n", "{out:?}");
        drop(ws);

        // port-forward: an HTTP request to the pod's httpd through the data channel.
        let url = s.url("ws", &format!("/portForward/{pod}"), &[("port", "8080")]);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut ws = connect(&url, "v4.channel.k8s.io").await;
            // Each channel first carries the port it is for (little-endian).
            let out = collect(&mut ws, |c| {
                c.get(&0).is_some_and(|d| d.len() >= 2) && c.get(&1).is_some_and(|d| d.len() >= 2)
            })
            .await;
            assert_eq!(
                out.get(&0).map(|d| &d[..2]),
                Some(&[0x90, 0x1f][..]),
                "{out:?}"
            );
            assert_eq!(
                out.get(&1).map(|d| &d[..2]),
                Some(&[0x90, 0x1f][..]),
                "{out:?}"
            );
            ws.send(Message::binary(
                b"\x00GET / HTTP/1.0\r\nHost: pod\r\n\r\n".to_vec(),
            ))
            .await
            .expect("request");
            let out = collect(&mut ws, |c| text(c, 0).contains("hello-from-httpd")).await;
            let response = text(&out, 0);
            if response.contains("hello-from-httpd") {
                assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
                break;
            }
            // httpd may not listen yet: the error channel says why.
            assert!(
                Instant::now() < deadline,
                "port-forward never reached httpd: {out:?}"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }

        // Clients that go away mid-stream: every proxied stream is let go.
        let url = s.url(
            "ws",
            &format!("/exec/{pod}/shell"),
            &[("command", "sleep"), ("command", "60"), ("output", "1")],
        );
        let mut sessions = Vec::new();
        for _ in 0..20 {
            let mut ws = connect(&url, "v4.channel.k8s.io").await;
            // The empty stdout message says the stream is set up.
            collect(&mut ws, |c| c.contains_key(&1)).await;
            sessions.push(ws);
        }
        assert_eq!(s.state.active_streams(), 20);
        drop(sessions);
    });
    s.wait_idle();
    // containerd 1.6 lets an exec without stdin run on when its stream is gone (upstream's
    // kubelet proxies the same runtime): what wasmlet owes is that nothing of the stream is left
    // here, which `wait_idle` checked.
}
