//! `rest_client_*`: client-go's request series for the API server client, as a tower layer on
//! kube's client stack. A request that got no answer counts with code `<error>`, as
//! client-go's.

use super::kubelet::kubelet;
use axum::http::{Request, Response};
use futures::future::BoxFuture;
use std::task::{Context, Poll};
use std::time::Instant;
use tower::{Layer, Service};

/// Counts and times every request of the client it wraps.
#[derive(Debug, Clone)]
pub struct RestClientMetricsLayer {
    host: String,
}

impl RestClientMetricsLayer {
    /// `host` is the API server's `host:port`, the series' `host` label.
    pub fn new(host: impl Into<String>) -> Self {
        Self { host: host.into() }
    }
}

impl<S> Layer<S> for RestClientMetricsLayer {
    type Service = RestClientMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RestClientMetrics {
            inner,
            host: self.host.clone(),
        }
    }
}

/// The service [`RestClientMetricsLayer`] makes.
#[derive(Debug, Clone)]
pub struct RestClientMetrics<S> {
    inner: S,
    host: String,
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for RestClientMetrics<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let method = request.method().as_str().to_string();
        let host = self.host.clone();
        let began = Instant::now();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let answer = answer.await;
            let code = match &answer {
                Ok(response) => response.status().as_u16().to_string(),
                Err(_) => "<error>".to_string(),
            };
            let metrics = kubelet();
            metrics
                .rest_client_requests
                .get_or_create(&vec![
                    ("code", code),
                    ("host", host.clone()),
                    ("method", method.clone()),
                ])
                .inc();
            metrics
                .rest_client_request_duration
                .get_or_create(&vec![("host", host), ("verb", method)])
                .observe(began.elapsed().as_secs_f64());
            answer
        })
    }
}
