//! A TCP relay on loopback between one node and the API server, which a test can cut and
//! restore: while cut, every relayed connection is shut down and a new one is closed as soon
//! as it is accepted, so the node alone loses the API server while the control plane and the
//! admin's kubectl carry on. TLS passes through untouched (the API server's certificate names
//! 127.0.0.1).

use parking_lot::Mutex;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The relay's shared state: whether it relays, and the streams it holds open.
#[derive(Default)]
struct State {
    open: AtomicBool,
    streams: Mutex<Vec<TcpStream>>,
    stopped: AtomicBool,
}

pub struct Relay {
    pub port: u16,
    state: Arc<State>,
}

impl Relay {
    /// A relay from a free loopback port to `target`, relaying from the start.
    pub fn start(target: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the relay");
        let port = listener.local_addr().expect("relay address").port();
        let state = Arc::new(State::default());
        state.open.store(true, Ordering::SeqCst);
        let shared = state.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if shared.stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                if !shared.open.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(target) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone()) else {
                    continue;
                };
                {
                    let mut streams = shared.streams.lock();
                    streams.retain(|s| s.peer_addr().is_ok());
                    for s in [&client, &server] {
                        if let Ok(s) = s.try_clone() {
                            streams.push(s);
                        }
                    }
                }
                std::thread::spawn(move || pump(client, server));
                std::thread::spawn(move || pump(server2, client2));
            }
        });
        Relay { port, state }
    }

    /// The node loses the API server: open connections are shut down, new ones closed.
    pub fn cut(&self) {
        self.state.open.store(false, Ordering::SeqCst);
        for stream in self.state.streams.lock().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// The node reaches the API server again.
    pub fn restore(&self) {
        self.state.open.store(true, Ordering::SeqCst);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.cut();
        self.state.stopped.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees `stopped` and ends.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Copies `from` to `to` until either side ends, then shuts both down.
fn pump(mut from: TcpStream, mut to: TcpStream) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// `kubeconfig` (a node's) with its `server:` pointed at the relay on `port`; and the
/// address it named.
pub fn through(kubeconfig: &str, port: u16) -> (String, Option<SocketAddr>) {
    let mut target = None;
    let text = kubeconfig
        .lines()
        .map(
            |line| match line.trim_start().strip_prefix("server: https://") {
                Some(address) => {
                    target = address.trim_end_matches('/').parse().ok();
                    let indent = &line[..line.len() - line.trim_start().len()];
                    format!("{indent}server: https://127.0.0.1:{port}")
                }
                None => line.to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join("\n");
    (text + "\n", target)
}
