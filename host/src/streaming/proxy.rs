//! The stream proxy: upstream's `proxyStream` (`UpgradeAwareHandler` with `upgradeRequired`).
//! The client's upgrade request goes to the runtime's streaming server at the URL CRI gave;
//! the 101 answer comes back as it is, and then the two upgraded connections are spliced
//! byte for byte. Nothing in between reads the protocol, so SPDY/3.1 and WebSocket (every
//! `channel.k8s.io` and `portforward.k8s.io` version) pass alike.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};

/// Connecting to the streaming server and getting its answer; upstream gives the backend
/// 10 s to write a refusal, and a healthy server answers an upgrade at once.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// The most of a refusal's body relayed to the client.
const MAX_REFUSAL_BYTES: usize = 64 << 10;
/// The most a backend's response head may take.
const MAX_HEAD_BYTES: usize = 64 << 10;
/// Per direction: large enough that a port-forward's bulk copy is not syscall-bound.
const SPLICE_BUFFER: usize = 64 << 10;
/// How long closing a spliced connection cleanly may take before it is just dropped.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(1);

/// Why a stream could not be set up; the client gets 500 with the message, as upstream's
/// proxy responder answers.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The runtime gave a URL wasmlet cannot dial (only `http://` streaming is supported).
    #[error("streaming URL {url:?} from the runtime is not usable: {reason}")]
    BadUrl {
        /// The URL as the runtime gave it.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The streaming server could not be reached.
    #[error("connecting to the runtime's streaming server at {addr}: {source}")]
    Connect {
        /// host:port dialled.
        addr: String,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// The streaming server broke the HTTP exchange.
    #[error("upgrade request to the runtime's streaming server at {addr}: {source}")]
    Http {
        /// host:port dialled.
        addr: String,
        /// hyper's account of it.
        #[source]
        source: hyper::Error,
    },
    /// The streaming server did not answer in time.
    #[error("the runtime's streaming server at {addr} did not answer within {after:?}")]
    Timeout {
        /// host:port dialled.
        addr: String,
        /// The deadline that passed.
        after: Duration,
    },
    /// The request to forward could not be built (a header the client sent).
    #[error("building the upgrade request: {0}")]
    Request(#[from] axum::http::Error),
}

impl IntoResponse for ProxyError {
    fn into_response(self) -> Response {
        tracing::warn!(error = %self, "streaming proxy failed");
        (StatusCode::INTERNAL_SERVER_ERROR, self.to_string()).into_response()
    }
}

/// Whether the request asks for a protocol upgrade (upstream's `httpstream.IsUpgradeRequest`:
/// some `Connection` header mentions "upgrade").
pub fn is_upgrade_request(headers: &HeaderMap) -> bool {
    headers.get_all(header::CONNECTION).iter().any(|value| {
        value
            .to_str()
            .is_ok_and(|v| v.to_ascii_lowercase().contains("upgrade"))
    })
}

/// Whether the request is a WebSocket upgrade (upstream's `wsstream.IsWebSocketRequest`),
/// which decides how port-forward ports are named.
pub fn is_websocket_request(headers: &HeaderMap) -> bool {
    let websocket = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    websocket && is_upgrade_request(headers)
}

/// Counts spliced streams while they live, so a test (and `/metrics`, later) can see that a
/// finished or abandoned stream let go of both connections.
#[derive(Debug, Default)]
pub struct ActiveStreams(AtomicUsize);

impl ActiveStreams {
    /// Streams spliced right now.
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    fn enter(self: &Arc<Self>) -> ActiveGuard {
        self.0.fetch_add(1, Ordering::SeqCst);
        ActiveGuard(self.clone())
    }
}

struct ActiveGuard(Arc<ActiveStreams>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Aborts the backend connection's task when the exchange is abandoned before its upgrade.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Where to dial and what to ask for, from the runtime's URL.
struct Target {
    addr: String,
    path_and_query: String,
}

fn target(url: &str) -> Result<Target, ProxyError> {
    let bad = |reason| ProxyError::BadUrl {
        url: url.to_string(),
        reason,
    };
    let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
    if uri.scheme_str() != Some("http") {
        return Err(bad("only http:// streaming servers are supported"));
    }
    let authority = uri.authority().ok_or_else(|| bad("no host"))?;
    let addr = match authority.port_u16() {
        Some(_) => authority.as_str().to_string(),
        None => format!("{}:80", authority.as_str()),
    };
    let path_and_query = uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    Ok(Target {
        addr,
        path_and_query,
    })
}

/// The client's headers for the streaming server: all of them (Connection, Upgrade,
/// X-Stream-Protocol-Version, Sec-WebSocket-*) but the client's credentials, which the
/// runtime has no use for, and the framing and host, which belong to the new request.
/// Public so the `kubelet_request` fuzz target (`fuzz/`) reaches it.
pub fn forwarded_headers(client: &HeaderMap, host: &str) -> Result<HeaderMap, ProxyError> {
    let mut headers = HeaderMap::with_capacity(client.len());
    for (name, value) in client {
        if name == header::HOST
            || name == header::AUTHORIZATION
            || name == header::PROXY_AUTHORIZATION
            || name == header::CONTENT_LENGTH
            || name == header::TRANSFER_ENCODING
        {
            continue;
        }
        headers.append(name.clone(), value.clone());
    }
    let host = HeaderValue::from_str(host).map_err(axum::http::Error::from)?;
    headers.insert(header::HOST, host);
    Ok(headers)
}

/// Proxies the upgrade request `request` to the streaming URL `url` and answers what the
/// streaming server answered. On 101 the splice runs in a task of its own until either
/// side closes; then both connections are closed, as upstream's proxy does.
pub async fn proxy(mut request: Request, url: &str, active: Arc<ActiveStreams>) -> Response {
    let client_upgrade = hyper::upgrade::on(&mut request);
    let target = match target(url) {
        Ok(target) => target,
        Err(error) => return error.into_response(),
    };
    let exchange = handshake(request.method().clone(), request.headers(), &target);
    let (mut response, connection) = match tokio::time::timeout(HANDSHAKE_TIMEOUT, exchange).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(error)) => return error.into_response(),
        Err(_) => {
            return ProxyError::Timeout {
                addr: target.addr,
                after: HANDSHAKE_TIMEOUT,
            }
            .into_response()
        }
    };
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        return relay_refusal(response, connection).await;
    }
    let backend_upgrade = hyper::upgrade::on(&mut response);
    let mut answer = Response::new(Body::empty());
    *answer.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    *answer.headers_mut() = std::mem::take(response.headers_mut());
    let guard = active.enter();
    tokio::spawn(async move {
        let _guard = guard;
        // The backend connection's task ends by handing its socket to the upgrade.
        let _connection = connection;
        let (client, backend) = match tokio::try_join!(client_upgrade, backend_upgrade) {
            Ok(both) => both,
            Err(error) => {
                tracing::debug!(%error, "stream upgrade did not complete");
                return;
            }
        };
        splice(TokioIo::new(client), TokioIo::new(backend)).await;
    });
    answer
}

/// Dials the streaming server and sends the upgrade request; returns its answer and the
/// connection's task.
async fn handshake(
    method: Method,
    client_headers: &HeaderMap,
    target: &Target,
) -> Result<(Response<hyper::body::Incoming>, AbortOnDrop), ProxyError> {
    let stream = tokio::net::TcpStream::connect(&target.addr)
        .await
        .map_err(|source| ProxyError::Connect {
            addr: target.addr.clone(),
            source,
        })?;
    let _ = stream.set_nodelay(true);
    let http_error = |source| ProxyError::Http {
        addr: target.addr.clone(),
        source,
    };
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        .max_buf_size(MAX_HEAD_BYTES)
        .handshake::<_, Body>(TokioIo::new(stream))
        .await
        .map_err(http_error)?;
    let addr = target.addr.clone();
    let connection = AbortOnDrop(tokio::spawn(async move {
        if let Err(error) = connection.with_upgrades().await {
            tracing::debug!(%addr, %error, "streaming server connection ended");
        }
    }));
    let mut backend_request = axum::http::Request::builder()
        .method(method)
        .uri(target.path_and_query.as_str())
        .body(Body::empty())?;
    *backend_request.headers_mut() = forwarded_headers(client_headers, &target.addr)?;
    let response = sender
        .send_request(backend_request)
        .await
        .map_err(http_error)?;
    Ok((response, connection))
}

/// The streaming server refused the upgrade: its status, headers and (bounded) body go back
/// to the client, as upstream echoes the backend's response.
async fn relay_refusal(
    response: Response<hyper::body::Incoming>,
    _connection: AbortOnDrop,
) -> Response {
    let (parts, body) = response.into_parts();
    let read = axum::body::to_bytes(Body::new(body), MAX_REFUSAL_BYTES);
    let body = match tokio::time::timeout(HANDSHAKE_TIMEOUT, read).await {
        Ok(Ok(bytes)) => bytes,
        _ => axum::body::Bytes::from_static(b"(the streaming server's answer was not readable)"),
    };
    tracing::debug!(status = %parts.status, "streaming server refused the upgrade");
    let mut answer = Response::new(Body::from(body));
    *answer.status_mut() = parts.status;
    for (name, value) in &parts.headers {
        if name != header::CONTENT_LENGTH
            && name != header::TRANSFER_ENCODING
            && name != header::CONNECTION
        {
            answer.headers_mut().append(name.clone(), value.clone());
        }
    }
    answer
}

/// Copies both ways until one direction ends (EOF or error), then closes both: a client that
/// goes away ends the runtime's stream, and a stream the runtime ends closes the client's.
async fn splice<C, B>(client: C, backend: B)
where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite,
    B: tokio::io::AsyncRead + tokio::io::AsyncWrite,
{
    let (client_read, mut client_write) = tokio::io::split(client);
    let (backend_read, mut backend_write) = tokio::io::split(backend);
    let mut client_read = BufReader::with_capacity(SPLICE_BUFFER, client_read);
    let mut backend_read = BufReader::with_capacity(SPLICE_BUFFER, backend_read);
    let (ended, result) = tokio::select! {
        r = tokio::io::copy_buf(&mut client_read, &mut backend_write) => ("client", r),
        r = tokio::io::copy_buf(&mut backend_read, &mut client_write) => ("runtime", r),
    };
    match result {
        Ok(bytes) => tracing::debug!(ended, bytes, "stream closed"),
        Err(error) => tracing::debug!(ended, %error, "stream broke"),
    }
    let _ = tokio::time::timeout(SHUTDOWN_TIMEOUT, async {
        let _ = client_write.shutdown().await;
        let _ = backend_write.shutdown().await;
    })
    .await;
}
