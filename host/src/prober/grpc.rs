//! `grpc` probes: the grpc.health.v1 `Check` call on a fresh plaintext connection to the pod
//! IP and port, as upstream; `SERVING` is success, anything else (another status, an RPC
//! error such as `Unimplemented`, a timeout) is a failure with upstream's messages.

use super::Outcome;
use std::time::Duration;

/// grpc.health.v1, generated from proto/grpc/health/v1/health.proto (client and server).
#[allow(clippy::all, missing_docs)]
pub mod health {
    tonic::include_proto!("grpc.health.v1");
}

use health::health_check_response::ServingStatus;
use health::health_client::HealthClient;
use health::HealthCheckRequest;

/// Calls `Check(service)` on `host:port` once.
pub async fn probe(host: &str, port: u16, service: &str, timeout: Duration) -> Outcome {
    let address = super::http::host_port(host, port);
    let endpoint = match tonic::transport::Endpoint::from_shared(format!("http://{address}")) {
        Ok(endpoint) => endpoint
            .connect_timeout(timeout)
            .timeout(timeout)
            .tcp_nodelay(true),
        Err(error) => return Outcome::Error(format!("grpc probe address {address}: {error}")),
    };
    let channel = match tokio::time::timeout(timeout, endpoint.connect()).await {
        Ok(Ok(channel)) => channel,
        Ok(Err(error)) => {
            return Outcome::Failure(format!(
                "timeout: failed to connect service {address:?} within {}s: {error}",
                timeout.as_secs()
            ))
        }
        Err(_) => {
            return Outcome::Failure(format!(
                "timeout: failed to connect service {address:?} within {}s",
                timeout.as_secs()
            ))
        }
    };
    let request = HealthCheckRequest {
        service: service.to_string(),
    };
    let mut client = HealthClient::new(channel);
    match tokio::time::timeout(timeout, client.check(request)).await {
        Ok(Ok(response)) => {
            let status = response.into_inner().status;
            if status == ServingStatus::Serving as i32 {
                Outcome::Success
            } else {
                let name = ServingStatus::try_from(status)
                    .map(|s| s.as_str_name().to_string())
                    .unwrap_or_else(|_| status.to_string());
                Outcome::Failure(format!("service unhealthy (responded with {name:?})"))
            }
        }
        Ok(Err(status)) if status.code() == tonic::Code::DeadlineExceeded => {
            Outcome::Failure(format!(
                "timeout: health rpc did not complete within {}s",
                timeout.as_secs()
            ))
        }
        Ok(Err(status)) => Outcome::Failure(format!(
            "error: health rpc probe failed: {:?}: {}",
            status.code(),
            status.message()
        )),
        Err(_) => Outcome::Failure(format!(
            "timeout: health rpc did not complete within {}s",
            timeout.as_secs()
        )),
    }
}
