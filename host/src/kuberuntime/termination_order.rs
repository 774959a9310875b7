//! The order a pod's containers stop in, as upstream's `terminationOrdering`: every container
//! is asked to stop at once (its preStop hooks start at once), but a sidecar sends its stop
//! signal only once the regular containers have exited and then each sidecar declared after
//! it, so the last sidecar declared stops first; the wait comes out of the grace period.

use crate::cri::{api, labels};
use std::future::Future;
use tokio::sync::watch;

/// What a live container is, for its place in the order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// A container of `spec.containers`: stops at once; sidecars wait for it.
    Regular,
    /// A restartable init container at this position among the init containers.
    Sidecar(usize),
    /// A regular init container or an ephemeral container: stops at once, nobody waits.
    Other,
}

impl Role {
    /// The role its labels record (`pod_config`); a container created without the type label
    /// counts as regular, so a sidecar never stops before it.
    pub(super) fn of(container: &api::ContainerStatus) -> Role {
        if let Some(position) = container.labels.get(labels::SIDECAR) {
            return Role::Sidecar(position.parse().unwrap_or(0));
        }
        match container
            .labels
            .get(labels::CONTAINER_TYPE)
            .map(String::as_str)
        {
            Some(labels::TYPE_INIT | labels::TYPE_EPHEMERAL) => Role::Other,
            _ => Role::Regular,
        }
    }
}

/// For each container (by index into `roles`), the containers that must exit before it is
/// sent its stop signal: for a sidecar, every regular container and the nearest sidecar
/// declared after it (which waits for the next, and so on); for the rest, none.
pub(super) fn prerequisites(roles: &[Role]) -> Vec<Vec<usize>> {
    let regular: Vec<usize> = (0..roles.len())
        .filter(|&i| roles[i] == Role::Regular)
        .collect();
    roles
        .iter()
        .map(|role| {
            let Role::Sidecar(position) = *role else {
                return Vec::new();
            };
            let next_sidecar = (0..roles.len())
                .filter_map(|j| match roles[j] {
                    Role::Sidecar(p) if p > position => Some((p, j)),
                    _ => None,
                })
                .min()
                .map(|(_, j)| j);
            regular.iter().copied().chain(next_sidecar).collect()
        })
        .collect()
}

/// One signal per container that it has exited, for the containers that wait on it.
pub(super) struct Exits {
    senders: Vec<watch::Sender<bool>>,
}

impl Exits {
    pub(super) fn new(count: usize) -> Exits {
        Exits {
            senders: (0..count).map(|_| watch::channel(false).0).collect(),
        }
    }

    /// Container `index` has exited.
    pub(super) fn exited(&self, index: usize) {
        if let Some(sender) = self.senders.get(index) {
            sender.send_replace(true);
        }
    }

    /// Resolves once every container in `waits_for` has exited.
    pub(super) fn turn(&self, waits_for: &[usize]) -> impl Future<Output = ()> + use<> {
        let mut receivers: Vec<watch::Receiver<bool>> = waits_for
            .iter()
            .filter_map(|&i| self.senders.get(i).map(watch::Sender::subscribe))
            .collect();
        async move {
            for receiver in &mut receivers {
                // A closed channel cannot happen while `Exits` lives; it ends the wait.
                let _ = receiver.wait_for(|exited| *exited).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::podutil::wait_for_turn;
    use std::time::Duration;
    use Role::{Other, Regular, Sidecar};

    #[test]
    fn sidecars_outlive_the_regular_containers_and_the_sidecars_declared_after_them() {
        // (roles of the live containers, in any order) -> what each waits for
        let cases: &[(&[Role], &[&[usize]])] = &[
            (&[Regular, Regular], &[&[], &[]]),
            (&[Sidecar(0), Regular], &[&[1], &[]]),
            // Declared log (0), proxy (2); a regular init container at 1 is not waited on.
            (
                &[Sidecar(0), Other, Sidecar(2), Regular, Regular],
                &[&[3, 4, 2], &[], &[3, 4], &[], &[]],
            ),
            // Three sidecars listed out of order: each waits for the next one declared.
            (
                &[Sidecar(4), Sidecar(1), Regular, Sidecar(2)],
                &[&[2], &[2, 3], &[], &[2, 0]],
            ),
            // No regular container left (still initializing): sidecars wait on each other only.
            (&[Sidecar(0), Sidecar(1), Other], &[&[1], &[], &[]]),
        ];
        for (roles, expected) in cases {
            let expected: Vec<Vec<usize>> = expected.iter().map(|w| w.to_vec()).collect();
            assert_eq!(prerequisites(roles), expected, "{roles:?}");
        }
    }

    #[test]
    fn roles_come_from_the_labels() {
        let with = |pairs: &[(&str, &str)]| api::ContainerStatus {
            labels: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        };
        assert_eq!(Role::of(&with(&[(labels::SIDECAR, "3")])), Sidecar(3));
        assert_eq!(Role::of(&with(&[(labels::SIDECAR, "true")])), Sidecar(0));
        let init = [(labels::CONTAINER_TYPE, labels::TYPE_INIT)];
        assert_eq!(Role::of(&with(&init)), Other);
        let ephemeral = [(labels::CONTAINER_TYPE, labels::TYPE_EPHEMERAL)];
        assert_eq!(Role::of(&with(&ephemeral)), Other);
        let regular = [(labels::CONTAINER_TYPE, labels::TYPE_REGULAR)];
        assert_eq!(Role::of(&with(&regular)), Regular);
        assert_eq!(Role::of(&with(&[])), Regular);
    }

    #[tokio::test]
    async fn a_turn_comes_when_its_containers_exit_or_the_grace_runs_out() {
        let exits = Exits::new(3);
        let turn = exits.turn(&[0, 1]);
        exits.exited(0);
        let grace = Duration::from_secs(30);
        let waiting = tokio::spawn(wait_for_turn(turn, grace));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "container 1 has not exited");
        exits.exited(1);
        let waited = waiting.await.expect("the wait ends");
        assert!(
            waited >= Duration::from_millis(50) && waited < grace,
            "{waited:?}"
        );
        // Nobody exits: the wait ends with the grace left.
        let limit = Duration::from_millis(100);
        let waited = wait_for_turn(exits.turn(&[2]), limit).await;
        assert!(waited >= limit, "{waited:?}");
        // No grace left: no wait at all, but a turn already come is taken.
        let waited = wait_for_turn(exits.turn(&[2]), Duration::ZERO).await;
        assert!(waited < limit, "{waited:?}");
        exits.exited(2);
        let mut turn = std::pin::pin!(exits.turn(&[2]));
        assert!(futures::poll!(&mut turn).is_ready());
    }
}
