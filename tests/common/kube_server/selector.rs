//! Label and field selectors, as the Kubernetes API parses and applies
//! them (the subset a test needs).
//!
//! Labels: `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`,
//! joined by commas. Fields: `path=v`, `path==v`, `path!=v`, joined by
//! commas, where `path` is any dotted path into the object's JSON
//! (`metadata.name`, `spec.nodeName`, `status.phase`); a missing field
//! reads as the empty string. A real API server accepts only the fields
//! each resource declares; this one accepts any.

use serde_json::Value;

#[derive(Debug, Clone)]
enum Label {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    Absent(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

#[derive(Debug, Clone)]
enum Field {
    Equals(Vec<String>, String),
    NotEquals(Vec<String>, String),
}

/// A request's label and field selectors together.
#[derive(Debug, Clone, Default)]
pub struct Selector {
    labels: Vec<Label>,
    fields: Vec<Field>,
}

/// Splits at commas outside parentheses.
fn requirements(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(text[start..at].trim());
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(text[start..].trim());
    parts.into_iter().filter(|part| !part.is_empty()).collect()
}

fn set_values(text: &str) -> Result<Vec<String>, String> {
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|rest| rest.strip_suffix(')'))
        .ok_or_else(|| format!("expected a parenthesised set, found {text:?}"))?;
    Ok(inner
        .split(',')
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
        .collect())
}

fn parse_label(text: &str) -> Result<Label, String> {
    if let Some((key, value)) = text.split_once("!=") {
        return Ok(Label::NotEquals(key.trim().into(), value.trim().into()));
    }
    if let Some((key, value)) = text.split_once("==") {
        return Ok(Label::Equals(key.trim().into(), value.trim().into()));
    }
    if let Some((key, value)) = text.split_once('=') {
        return Ok(Label::Equals(key.trim().into(), value.trim().into()));
    }
    if let Some((key, values)) = text.split_once(" notin ") {
        return Ok(Label::NotIn(key.trim().into(), set_values(values)?));
    }
    if let Some((key, values)) = text.split_once(" in ") {
        return Ok(Label::In(key.trim().into(), set_values(values)?));
    }
    if let Some(key) = text.strip_prefix('!') {
        return Ok(Label::Absent(key.trim().into()));
    }
    if text.contains(char::is_whitespace) || text.contains('(') {
        return Err(format!("unable to parse requirement {text:?}"));
    }
    Ok(Label::Exists(text.into()))
}

fn parse_field(text: &str) -> Result<Field, String> {
    let path = |path: &str| path.trim().split('.').map(str::to_owned).collect();
    if let Some((key, value)) = text.split_once("!=") {
        return Ok(Field::NotEquals(path(key), value.trim().into()));
    }
    if let Some((key, value)) = text.split_once("==") {
        return Ok(Field::Equals(path(key), value.trim().into()));
    }
    if let Some((key, value)) = text.split_once('=') {
        return Ok(Field::Equals(path(key), value.trim().into()));
    }
    Err(format!("invalid field selector requirement {text:?}"))
}

impl Selector {
    /// Parses a request's `labelSelector` and `fieldSelector` (either may be
    /// absent). `Err` says what is wrong, for a `400 Bad Request`.
    pub fn parse(labels: Option<&str>, fields: Option<&str>) -> Result<Self, String> {
        let labels = requirements(labels.unwrap_or(""))
            .into_iter()
            .map(parse_label)
            .collect::<Result<_, _>>()?;
        let fields = requirements(fields.unwrap_or(""))
            .into_iter()
            .map(parse_field)
            .collect::<Result<_, _>>()?;
        Ok(Selector { labels, fields })
    }

    /// Whether the selector selects everything.
    pub fn is_everything(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// Whether `object` matches every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let label = |key: &str| {
            object
                .pointer("/metadata/labels")
                .and_then(|labels| labels.get(key))
                .and_then(Value::as_str)
        };
        let labels_match = self.labels.iter().all(|requirement| match requirement {
            Label::Equals(key, value) => label(key) == Some(value.as_str()),
            Label::NotEquals(key, value) => label(key) != Some(value.as_str()),
            Label::Exists(key) => label(key).is_some(),
            Label::Absent(key) => label(key).is_none(),
            Label::In(key, values) => label(key).is_some_and(|v| values.iter().any(|x| x == v)),
            Label::NotIn(key, values) => !label(key).is_some_and(|v| values.iter().any(|x| x == v)),
        });
        let field = |path: &[String]| -> String {
            let mut at = object;
            for step in path {
                match at.get(step) {
                    Some(next) => at = next,
                    None => return String::new(),
                }
            }
            match at {
                Value::String(text) => text.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            }
        };
        labels_match
            && self.fields.iter().all(|requirement| match requirement {
                Field::Equals(path, value) => &field(path) == value,
                Field::NotEquals(path, value) => &field(path) != value,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::Selector;
    use serde_json::json;

    #[test]
    fn selectors_follow_the_api() {
        let pod = json!({
            "metadata": {"name": "a", "labels": {"app": "web", "tier": "front"}},
            "spec": {"nodeName": "n1"}
        });
        let yes = |labels, fields| Selector::parse(labels, fields).unwrap().matches(&pod);
        assert!(yes(Some("app=web"), None));
        assert!(yes(Some("app==web,tier"), None));
        assert!(!yes(Some("app!=web"), None));
        assert!(yes(Some("!missing"), None));
        assert!(yes(Some("tier in (back, front)"), None));
        assert!(!yes(Some("tier notin (front)"), None));
        assert!(yes(None, Some("spec.nodeName=n1,metadata.name=a")));
        assert!(!yes(None, Some("spec.nodeName!=n1")));
        assert!(yes(None, Some("status.phase=")));
    }
}
