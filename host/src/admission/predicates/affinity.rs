//! `nodeSelector` and required node affinity (component-helpers
//! `scheduling/corev1/nodeaffinity` `GetRequiredNodeAffinity(pod).Match(node)`): every
//! `nodeSelector` label must equal the node's, and one of the
//! `requiredDuringSchedulingIgnoredDuringExecution` terms must match. A term ANDs its
//! `matchExpressions` (on labels) and `matchFields` (on `metadata.name`); an empty term, or
//! one with an invalid requirement, matches nothing.

use k8s_openapi::api::core::v1::{Node, NodeSelectorRequirement, NodeSelectorTerm, PodSpec};
use std::collections::BTreeMap;

type Labels = BTreeMap<String, String>;

/// Whether `node` satisfies the pod's `nodeSelector` and required node affinity.
pub(super) fn required_matches(spec: &PodSpec, node: &Node) -> bool {
    let empty = Labels::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    let selector_matches = spec
        .node_selector
        .iter()
        .flatten()
        .all(|(key, value)| labels.get(key) == Some(value));
    if !selector_matches {
        return false;
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    let Some(required) = required else {
        return true;
    };
    let name = node.metadata.name.as_deref().unwrap_or("");
    required
        .node_selector_terms
        .iter()
        .any(|term| term_matches(term, labels, name))
}

fn term_matches(term: &NodeSelectorTerm, labels: &Labels, node_name: &str) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    // A term is parsed whole before it is matched: one invalid requirement fails the term
    // even when another requirement already would.
    let Some(expressions) = expressions
        .iter()
        .map(LabelRequirement::parse)
        .collect::<Option<Vec<_>>>()
    else {
        return false;
    };
    let Some(fields) = fields
        .iter()
        .map(FieldRequirement::parse)
        .collect::<Option<Vec<_>>>()
    else {
        return false;
    };
    // Upstream matches fields only when the node has a name.
    expressions.iter().all(|r| r.matches(labels))
        && (node_name.is_empty() || fields.iter().all(|r| r.matches(node_name)))
}

/// A `matchExpressions` entry that passed upstream's `labels.NewRequirement` checks (the
/// number of values per operator, integers for `Gt`/`Lt`); the syntax of keys and values
/// beyond emptiness is left to API validation.
enum LabelRequirement<'a> {
    In(&'a str, &'a [String]),
    NotIn(&'a str, &'a [String]),
    Exists(&'a str),
    DoesNotExist(&'a str),
    Gt(&'a str, i64),
    Lt(&'a str, i64),
}

impl<'a> LabelRequirement<'a> {
    fn parse(r: &'a NodeSelectorRequirement) -> Option<Self> {
        let key = r.key.as_str();
        let values = r.values.as_deref().unwrap_or_default();
        if key.is_empty() {
            return None;
        }
        let integer = || match values {
            [one] => one.parse::<i64>().ok(),
            _ => None,
        };
        Some(match r.operator.as_str() {
            "In" if !values.is_empty() => Self::In(key, values),
            "NotIn" if !values.is_empty() => Self::NotIn(key, values),
            "Exists" if values.is_empty() => Self::Exists(key),
            "DoesNotExist" if values.is_empty() => Self::DoesNotExist(key),
            "Gt" => Self::Gt(key, integer()?),
            "Lt" => Self::Lt(key, integer()?),
            _ => return None,
        })
    }

    fn matches(&self, labels: &Labels) -> bool {
        // Go's ParseInt and Rust's parse agree: an optional sign, then decimal digits.
        let number = |key: &str| labels.get(key).and_then(|v| v.parse::<i64>().ok());
        match *self {
            Self::In(key, values) => labels.get(key).is_some_and(|v| values.contains(v)),
            Self::NotIn(key, values) => !labels.get(key).is_some_and(|v| values.contains(v)),
            Self::Exists(key) => labels.contains_key(key),
            Self::DoesNotExist(key) => !labels.contains_key(key),
            Self::Gt(key, bound) => number(key).is_some_and(|n| n > bound),
            Self::Lt(key, bound) => number(key).is_some_and(|n| n < bound),
        }
    }
}

/// A `matchFields` entry: `In` or `NotIn` with exactly one value. The only node field is
/// `metadata.name`; any other key reads as empty, as upstream's field set does.
struct FieldRequirement<'a> {
    key: &'a str,
    value: &'a str,
    equal: bool,
}

impl<'a> FieldRequirement<'a> {
    fn parse(r: &'a NodeSelectorRequirement) -> Option<Self> {
        let [value] = r.values.as_deref().unwrap_or_default() else {
            return None;
        };
        let equal = match r.operator.as_str() {
            "In" => true,
            "NotIn" => false,
            _ => return None,
        };
        Some(Self {
            key: &r.key,
            value,
            equal,
        })
    }

    fn matches(&self, node_name: &str) -> bool {
        let field = if self.key == "metadata.name" {
            node_name
        } else {
            ""
        };
        (field == self.value) == self.equal
    }
}
