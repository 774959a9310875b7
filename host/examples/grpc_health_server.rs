//! A grpc.health.v1 server for the grpc probe tests: built statically by scripts/test.sh and
//! put into the `wasmlet-test:local` image (busybox has no gRPC).
//!
//! `grpc_health_server PORT [NOT_SERVING_AFTER_SECONDS]`: answers `Check` for the service ""
//! and "wasmlet" with SERVING, and with NOT_SERVING once the given number of seconds has
//! passed (so a liveness probe sees it fail); any other service is NOT_FOUND, as the
//! protocol says.

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use std::time::{Duration, Instant};
use tonic::{Request, Response, Status};
use wasmlet::prober::grpc::health::health_check_response::ServingStatus;
use wasmlet::prober::grpc::health::health_server::{Health, HealthServer};
use wasmlet::prober::grpc::health::{HealthCheckRequest, HealthCheckResponse};

struct Server {
    started: Instant,
    not_serving_after: Option<Duration>,
}

#[tonic::async_trait]
impl Health for Server {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        let service = request.into_inner().service;
        if !service.is_empty() && service != "wasmlet" {
            return Err(Status::not_found(format!("unknown service {service:?}")));
        }
        let failing = self
            .not_serving_after
            .is_some_and(|after| self.started.elapsed() >= after);
        let status = if failing {
            ServingStatus::NotServing
        } else {
            ServingStatus::Serving
        };
        Ok(Response::new(HealthCheckResponse {
            status: status as i32,
        }))
    }

    type WatchStream =
        std::pin::Pin<Box<dyn futures::Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

    async fn watch(
        &self,
        _request: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        Err(Status::unimplemented("Watch is not served here"))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let port: u16 = args
        .next()
        .ok_or("usage: PORT [NOT_SERVING_AFTER_SECONDS]")?
        .parse()?;
    let not_serving_after = match args.next() {
        Some(s) => Some(Duration::from_secs(s.parse()?)),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        // tonic's router feature is off in wasmlet (it only needs clients): serve the
        // generated service over hyper's HTTP/2 directly.
        let service = HealthServer::new(Server {
            started: Instant::now(),
            not_serving_after,
        });
        let listener = tokio::net::TcpListener::bind(("0.0.0.0", port)).await?;
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        loop {
            let stream = tokio::select! {
                accepted = listener.accept() => accepted?.0,
                _ = terminate.recv() => return Ok(()),
            };
            // Headers, message and trailers go out as separate writes: without NODELAY,
            // Nagle and the client's delayed ACK add 40 ms to some calls.
            let _ = stream.set_nodelay(true);
            let service = service.clone();
            tokio::spawn(async move {
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .http2_only()
                    .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service))
                    .await;
            });
        }
    })
}
