//! `kubelet_running_pods` and `kubelet_running_containers`: what the last relist saw, with
//! the starts and exits containerd has reported since, so a scrape between two slow relists
//! (300 s while the event stream is up) shows the containers as they are.

use super::{Record, State};
use std::collections::{HashMap, HashSet};

/// The gauges' inputs between two relists.
#[derive(Default)]
pub(super) struct RunningGauges {
    sandbox_ids: HashSet<String>,
    /// States that containerd's events reported since the last relist, by container ID.
    since_relist: HashMap<String, State>,
}

impl RunningGauges {
    /// A relist replaced the records: its states supersede every event before it.
    pub(super) fn relisted(
        &mut self,
        records: &HashMap<String, Record>,
        sandbox_ids: HashSet<String>,
    ) {
        self.sandbox_ids = sandbox_ids;
        self.since_relist.clear();
        self.publish(records);
    }

    /// An event moved a listed container (or sandbox) to `state`.
    pub(super) fn event(
        &mut self,
        records: &HashMap<String, Record>,
        container_id: &str,
        state: State,
    ) {
        if records.contains_key(container_id) && self.since_relist.len() < 4096 {
            self.since_relist.insert(container_id.to_string(), state);
            self.publish(records);
        }
    }

    /// Sets both gauges, as upstream's `updateRunningPodAndContainerMetrics`.
    fn publish(&self, records: &HashMap<String, Record>) {
        let metrics = crate::metrics::kubelet::kubelet();
        let (running_pods, by_state) = self.counts(records);
        metrics.running_pods.set(running_pods);
        for (state, count) in by_state {
            metrics
                .running_containers
                .get_or_create(&crate::metrics::kubelet::label(
                    "container_state",
                    state.as_str(),
                ))
                .set(count);
        }
    }

    /// Pods with a ready sandbox, and containers (sandboxes excluded) by state.
    fn counts(&self, records: &HashMap<String, Record>) -> (i64, [(State, i64); 4]) {
        let mut running_pods = HashSet::new();
        let mut by_state = [
            (State::Running, 0),
            (State::Exited, 0),
            (State::Created, 0),
            (State::Unknown, 0),
        ];
        for (id, record) in records {
            let state = self.since_relist.get(id).copied().unwrap_or(record.state);
            if self.sandbox_ids.contains(id) {
                if state == State::Running {
                    running_pods.insert(record.pod_uid.as_str());
                }
                continue;
            }
            if let Some((_, count)) = by_state.iter_mut().find(|(s, _)| *s == state) {
                *count += 1;
            }
        }
        (running_pods.len() as i64, by_state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(pod_uid: &str, state: State) -> Record {
        Record {
            pod_uid: pod_uid.into(),
            state,
        }
    }

    #[test]
    fn events_since_the_relist_move_the_counts_until_the_next_relist() {
        let mut records = HashMap::from([
            ("sandbox".to_string(), record("a", State::Running)),
            ("app".to_string(), record("a", State::Created)),
        ]);
        let mut gauges = RunningGauges::default();
        gauges.relisted(&records, HashSet::from(["sandbox".to_string()]));
        let count = |g: &RunningGauges, r: &HashMap<String, Record>, want: State| {
            g.counts(r)
                .1
                .into_iter()
                .find(|(s, _)| *s == want)
                .map(|(_, n)| n)
        };
        assert_eq!(count(&gauges, &records, State::Created), Some(1));

        gauges.event(&records, "app", State::Running);
        assert_eq!(count(&gauges, &records, State::Running), Some(1));
        assert_eq!(count(&gauges, &records, State::Created), Some(0));
        // A container the relist has not seen is left to the relist.
        gauges.event(&records, "unlisted", State::Running);
        assert_eq!(count(&gauges, &records, State::Running), Some(1));

        gauges.event(&records, "sandbox", State::Exited);
        assert_eq!(gauges.counts(&records).0, 0);

        // The relist's states replace the events'.
        records.insert("app".into(), record("a", State::Exited));
        gauges.relisted(&records, HashSet::from(["sandbox".to_string()]));
        assert_eq!(count(&gauges, &records, State::Exited), Some(1));
        assert_eq!(gauges.counts(&records).0, 1);
    }
}
