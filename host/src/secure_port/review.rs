//! TokenReview and SubjectAccessReview through the node's own API client (cluster mode): the
//! Node authorizer lets every node create both, as upstream's kubelet does.

use super::authn::TokenReviewer;
use super::authz::AccessReviewer;
use crate::cluster::{ApiClients, ApiError};
use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, TokenReviewStatus};
use k8s_openapi::api::authorization::v1::{
    SubjectAccessReview, SubjectAccessReviewSpec, SubjectAccessReviewStatus,
};

/// A review the API server could not answer; the request fails (401 or 500) and nothing is
/// cached, so the next request asks again.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The call failed (no answer in time, transport, an error status).
    #[error("{review}: {source}")]
    Api {
        /// `TokenReview` or `SubjectAccessReview`.
        review: &'static str,
        /// What the API client said.
        #[source]
        source: ApiError,
    },
    /// The API server answered without a status.
    #[error("{review}: the answer has no status")]
    NoStatus {
        /// `TokenReview` or `SubjectAccessReview`.
        review: &'static str,
    },
}

/// The reviews asked of the API server as this node.
#[derive(Clone)]
pub struct ApiReviews(pub ApiClients);

impl TokenReviewer for ApiReviews {
    fn review<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<TokenReviewStatus, ReviewError>> {
        Box::pin(async move {
            let review = TokenReview {
                spec: TokenReviewSpec {
                    token: Some(token.to_string()),
                    audiences: None,
                },
                ..Default::default()
            };
            let api: kube::Api<TokenReview> = kube::Api::all(self.0.main.clone());
            let answer = self
                .0
                .call(api.create(&Default::default(), &review))
                .await
                .map_err(|source| ReviewError::Api {
                    review: "TokenReview",
                    source,
                })?;
            answer.status.ok_or(ReviewError::NoStatus {
                review: "TokenReview",
            })
        })
    }
}

impl AccessReviewer for ApiReviews {
    fn review<'a>(
        &'a self,
        spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'a, Result<SubjectAccessReviewStatus, ReviewError>> {
        Box::pin(async move {
            let review = SubjectAccessReview {
                spec,
                ..Default::default()
            };
            let api: kube::Api<SubjectAccessReview> = kube::Api::all(self.0.main.clone());
            let answer = self
                .0
                .call(api.create(&Default::default(), &review))
                .await
                .map_err(|source| ReviewError::Api {
                    review: "SubjectAccessReview",
                    source,
                })?;
            answer.status.ok_or(ReviewError::NoStatus {
                review: "SubjectAccessReview",
            })
        })
    }
}
