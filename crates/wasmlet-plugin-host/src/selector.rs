//! Which pods a `lifecycle-hooks` plugin serves (`selector:` of its entry): namespaces and a
//! label selector with the API's `matchLabels`/`matchExpressions` meaning, so an operator
//! can give one team's admission rule or drain hook to that team's pods only. No selector:
//! every pod, as before.

use crate::records::PodMeta;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The pods a plugin runs for: all conditions hold (an empty list or map places no condition).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSelector {
    /// The pod's namespace is one of these.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Every label here is on the pod with this value.
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    /// Every requirement holds, as `metav1.LabelSelector` evaluates them.
    #[serde(default)]
    pub match_expressions: Vec<LabelRequirement>,
}

/// One `matchExpressions` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelRequirement {
    /// The label key.
    pub key: String,
    /// How the label's value is compared with `values`.
    pub operator: Operator,
    /// Non-empty for `In`/`NotIn`, empty for `Exists`/`DoesNotExist`.
    #[serde(default)]
    pub values: Vec<String>,
}

/// The label selector operators of the API (`metav1.LabelSelectorOperator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum Operator {
    /// The label is there with one of the values.
    In,
    /// The label is absent or has none of the values.
    NotIn,
    /// The label is there, whatever its value.
    Exists,
    /// The label is absent.
    DoesNotExist,
}

impl PodSelector {
    /// Whether the pod `meta` describes is one this plugin serves.
    pub fn matches(&self, meta: &PodMeta) -> bool {
        (self.namespaces.is_empty() || self.namespaces.contains(&meta.namespace))
            && self
                .match_labels
                .iter()
                .all(|(key, value)| meta.labels.get(key) == Some(value))
            && self
                .match_expressions
                .iter()
                .all(|requirement| requirement.holds(&meta.labels))
    }

    /// The first entry that cannot select anything as written: `(field, reason)`, the field
    /// relative to `selector`.
    pub fn problem(&self) -> Option<(String, String)> {
        if let Some((i, _)) = self
            .namespaces
            .iter()
            .enumerate()
            .find(|(_, n)| n.is_empty())
        {
            return Some((format!("namespaces[{i}]"), "must not be empty".into()));
        }
        if self.match_labels.keys().any(String::is_empty) {
            return Some(("matchLabels".into(), "a label key must not be empty".into()));
        }
        self.match_expressions
            .iter()
            .enumerate()
            .find_map(|(i, requirement)| {
                let place = |field: &str| format!("matchExpressions[{i}].{field}");
                if requirement.key.is_empty() {
                    return Some((place("key"), "must not be empty".into()));
                }
                match (requirement.operator, requirement.values.is_empty()) {
                    (Operator::In | Operator::NotIn, true) => Some((
                        place("values"),
                        "must be non-empty for the operators In and NotIn".into(),
                    )),
                    (Operator::Exists | Operator::DoesNotExist, false) => Some((
                        place("values"),
                        "must be empty for the operators Exists and DoesNotExist".into(),
                    )),
                    _ => None,
                }
            })
    }
}

impl LabelRequirement {
    fn holds(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::In => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(namespace: &str, labels: &[(&str, &str)]) -> PodMeta {
        PodMeta {
            namespace: namespace.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        }
    }

    fn selector(yaml: &str) -> PodSelector {
        crate::yaml::from_str(yaml).unwrap_or_else(|e| panic!("{yaml}: {e}"))
    }

    #[test]
    fn an_empty_selector_selects_every_pod() {
        assert!(PodSelector::default().matches(&pod("any", &[])));
    }

    #[test]
    fn namespaces_labels_and_expressions_must_all_hold() {
        let s = selector(
            "namespaces: [prod, staging]\nmatchLabels: {team: a}\nmatchExpressions:\n- {key: tier, operator: In, values: [web, api]}\n- {key: canary, operator: DoesNotExist}\n",
        );
        assert!(s.matches(&pod("prod", &[("team", "a"), ("tier", "web")])));
        assert!(!s.matches(&pod("dev", &[("team", "a"), ("tier", "web")])));
        assert!(!s.matches(&pod("prod", &[("team", "b"), ("tier", "web")])));
        assert!(!s.matches(&pod("prod", &[("team", "a"), ("tier", "db")])));
        assert!(!s.matches(&pod("prod", &[("team", "a")])));
        assert!(!s.matches(&pod(
            "prod",
            &[("team", "a"), ("tier", "web"), ("canary", "")]
        )));
    }

    #[test]
    fn not_in_and_exists_follow_the_api() {
        let not_in = selector("matchExpressions: [{key: tier, operator: NotIn, values: [db]}]");
        assert!(not_in.matches(&pod("x", &[])), "an absent label is not in");
        assert!(not_in.matches(&pod("x", &[("tier", "web")])));
        assert!(!not_in.matches(&pod("x", &[("tier", "db")])));
        let exists = selector("matchExpressions: [{key: tier, operator: Exists}]");
        assert!(exists.matches(&pod("x", &[("tier", "")])));
        assert!(!exists.matches(&pod("x", &[])));
    }

    #[test]
    fn entries_that_cannot_select_name_their_field() {
        let problem = |yaml: &str| selector(yaml).problem().map(|(field, _)| field);
        assert_eq!(
            problem("matchExpressions: [{key: a, operator: In}]").as_deref(),
            Some("matchExpressions[0].values")
        );
        assert_eq!(
            problem("matchExpressions: [{key: a, operator: Exists, values: [x]}]").as_deref(),
            Some("matchExpressions[0].values")
        );
        assert_eq!(
            problem("namespaces: [a, '']").as_deref(),
            Some("namespaces[1]")
        );
        assert_eq!(
            problem("matchLabels: {'': x}").as_deref(),
            Some("matchLabels")
        );
        assert_eq!(problem("namespaces: [a]"), None);
        assert!(crate::yaml::from_str::<PodSelector>(
            "matchExpressions: [{key: a, operator: Has}]"
        )
        .is_err());
    }
}
