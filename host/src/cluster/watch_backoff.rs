//! Back-off for the node's watches of the API server. Every watch resumes with kube-runtime's
//! default back-off (800 ms doubling to 30 s), except after the server's `410 Gone`: the
//! server answered, only the resourceVersion the watch resumed from is older than it keeps,
//! so the watcher re-lists at once instead of waiting out a back-off that grew while the
//! server was away. A pod deleted during an outage is then seen gone as soon as the server is
//! back, not up to 30 s later. A second 410 before the re-list completes backs off as usual.

use futures::{Stream, StreamExt};
use kube::runtime::utils::Backoff;
use kube::runtime::watcher;
use kube::runtime::WatchStreamExt;
use tracing::info;

/// Whether the watch failed with the API server's `410 Gone`: the resourceVersion it resumed
/// from is older than the server keeps, so the watcher re-lists.
pub fn expired(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::WatchError(status) => status.code == 410,
        watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status.code == 410,
        _ => false,
    }
}

/// `stream` (a watcher's, or a reflector's around one) with kube-runtime's default back-off
/// on every error but the first `410 Gone` of a re-list, which is logged under `what` and
/// dropped so that the watcher re-lists without waiting.
pub fn backed_off<K, S>(
    stream: S,
    what: &'static str,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send
where
    K: Send + 'static,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send,
{
    with_backoff(stream, what, watcher::DefaultBackoff::default())
}

/// [`backed_off`] with the back-off policy `backoff`.
fn with_backoff<K, S, B>(
    stream: S,
    what: &'static str,
    backoff: B,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send
where
    K: Send + 'static,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send,
    B: Backoff,
{
    let mut relisting = false;
    stream
        .map(move |item| match item {
            Ok(event) => {
                if matches!(event, watcher::Event::InitDone) {
                    relisting = false;
                }
                Ok(Some(event))
            }
            Err(error) if expired(&error) && !relisting => {
                relisting = true;
                info!(%error, watch = what, "watch expired (410 Gone); re-listing now");
                // An item that is not an error: the back-off resets and the watcher re-lists.
                Ok(None)
            }
            Err(error) => Err(error),
        })
        .backoff(backoff)
        .filter_map(|item| futures::future::ready(item.transpose()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;
    use parking_lot::Mutex;
    use std::sync::Arc;
    use std::time::Duration;

    fn gone() -> watcher::Error {
        let status = Status::failure("too old resource version: 5 (9)", "Expired").with_code(410);
        watcher::Error::WatchError(status.boxed())
    }

    #[test]
    fn a_410_is_told_apart_from_other_watch_failures() {
        assert!(expired(&gone()));
        let status = Status::failure("too old resource version: 5 (9)", "Expired").with_code(410);
        assert!(expired(&watcher::Error::WatchStartFailed(
            kube::Error::Api(status.boxed())
        )));
        let unavailable = Status::failure("etcd is down", "ServiceUnavailable").with_code(503);
        assert!(!expired(&watcher::Error::WatchError(unavailable.boxed())));
        assert!(!expired(&watcher::Error::NoResourceVersion));
    }

    /// A back-off that sleeps not at all and records what the stream asked of it.
    #[derive(Clone, Default)]
    struct Recorded(Arc<Mutex<Vec<&'static str>>>);

    impl Iterator for Recorded {
        type Item = Duration;
        fn next(&mut self) -> Option<Duration> {
            self.0.lock().push("wait");
            Some(Duration::ZERO)
        }
    }

    impl Backoff for Recorded {
        fn reset(&mut self) {
            self.0.lock().push("reset");
        }
    }

    #[tokio::test]
    async fn the_first_410_of_a_relist_does_not_wait_and_other_errors_do() {
        let failure = || watcher::Error::NoResourceVersion;
        let items: Vec<Result<watcher::Event<()>, watcher::Error>> = vec![
            Err(failure()),
            Err(failure()),
            // Dropped: it does not reach the caller, and the back-off starts again.
            Err(gone()),
            Ok(watcher::Event::Init),
            // A second 410 before the re-list completes is an error like any other.
            Err(gone()),
            Ok(watcher::Event::InitDone),
            // After InitDone, a 410 starts a new re-list and is dropped again.
            Err(gone()),
        ];
        let backoff = Recorded::default();
        let stream = with_backoff(futures::stream::iter(items), "test", backoff.clone());
        let seen: Vec<bool> = stream.map(|item| item.is_ok()).collect().await;
        assert_eq!(
            seen,
            [false, false, true, false, true],
            "two 410s are dropped"
        );
        let asked = backoff.0.lock().clone();
        // One entry per item the inner stream yields, and a last reset at its end.
        let expected = ["wait", "wait", "reset", "reset", "wait", "reset", "reset"];
        assert_eq!(asked[..expected.len()], expected, "{asked:?}");
    }
}
