//! The HTTP side of the test server: routes (`/api/v1/...`), query strings,
//! JSON answers and `Status` errors, and the object handlers (get, list,
//! create, replace, merge-patch, delete). Watches are in watch.rs.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};

use super::State;
use super::selector::Selector;
use super::storage::{KINDS, Kind, StoreError, metadata_mut};

pub type ResponseBody = BoxBody<Bytes, io::Error>;

/// A response body fed through a channel: each item is one chunk of a
/// chunked response; an `Err` aborts the connection mid-response (a
/// dropped watch), the channel's end ends the response cleanly.
pub struct ChannelBody(pub tokio::sync::mpsc::Receiver<Result<Bytes, io::Error>>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|item| item.map(|chunk| chunk.map(Frame::data)))
    }
}

/// A parsed request: what the handlers need.
pub struct Call {
    pub method: Method,
    pub kind: Kind,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub status_subresource: bool,
    pub query: HashMap<String, String>,
    /// Metadata only (`Accept: ...;as=PartialObjectMetadata[List]`).
    pub metadata_only: bool,
    pub content_type: String,
    pub body: Bytes,
}

impl Call {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }

    pub fn selector(&self) -> Result<Selector, String> {
        Selector::parse(self.param("labelSelector"), self.param("fieldSelector"))
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'+' => out.push(b' '),
            b'%' if at + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[at + 1..at + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(byte) => {
                        out.push(byte);
                        at += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        at += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_query(query: Option<&str>) -> HashMap<String, String> {
    query
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) => (percent_decode(key), percent_decode(value)),
            None => (percent_decode(pair), String::new()),
        })
        .collect()
}

/// The kind, namespace, name and subresource a path names.
fn route(path: &str) -> Option<(Kind, Option<String>, Option<String>, bool)> {
    let rest = path.strip_prefix("/api/v1/")?;
    let parts: Vec<&str> = rest.split('/').filter(|part| !part.is_empty()).collect();
    let kind_of = |plural: &str| KINDS.iter().copied().find(|kind| kind.plural == plural);
    let (kind, namespace, tail) = match parts.as_slice() {
        ["namespaces", namespace, plural, tail @ ..] => {
            let kind = kind_of(plural)?;
            if !kind.namespaced {
                return None;
            }
            (kind, Some((*namespace).to_owned()), tail)
        }
        [plural, tail @ ..] => (kind_of(plural)?, None, tail),
        [] => return None,
    };
    match tail {
        [] => Some((kind, namespace, None, false)),
        [name] if namespace.is_some() || !kind.namespaced => {
            Some((kind, namespace, Some((*name).to_owned()), false))
        }
        [name, "status"] if namespace.is_some() || !kind.namespaced => {
            Some((kind, namespace, Some((*name).to_owned()), true))
        }
        _ => None,
    }
}

pub fn full(status: StatusCode, body: Vec<u8>) -> Response<ResponseBody> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(
            Full::new(Bytes::from(body))
                .map_err(|never: Infallible| match never {})
                .boxed(),
        )
        .expect("a valid response")
}

pub fn json_response(status: StatusCode, value: &Value) -> Response<ResponseBody> {
    full(status, serde_json::to_vec(value).expect("JSON"))
}

/// A `Status` object, as the API sends for an error.
pub fn status_object(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    })
}

pub fn status_response(code: u16, reason: &str, message: &str) -> Response<ResponseBody> {
    json_response(
        StatusCode::from_u16(code).expect("a status code"),
        &status_object(code, reason, message),
    )
}

fn store_error(error: StoreError, what: &str) -> Response<ResponseBody> {
    match error {
        StoreError::NotFound => status_response(404, "NotFound", &format!("{what} not found")),
        StoreError::AlreadyExists => {
            status_response(409, "AlreadyExists", &format!("{what} already exists"))
        }
        StoreError::Conflict => status_response(
            409,
            "Conflict",
            &format!(
                "Operation cannot be fulfilled on {what}: the object has been modified; please \
                 apply your changes to the latest version and try again"
            ),
        ),
        StoreError::Compacted => status_response(410, "Expired", "the revision is compacted"),
        StoreError::Etcd(detail) => status_response(500, "InternalError", &detail),
    }
}

/// Serves one request.
pub async fn handle(state: Arc<State>, request: Request<Incoming>) -> Response<ResponseBody> {
    let (parts, body) = request.into_parts();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_owned(), |pq| pq.as_str().to_owned());
    state.log(format!("{} {}", parts.method, path_and_query));
    let Some((kind, namespace, name, status_subresource)) = route(parts.uri.path()) else {
        return status_response(
            404,
            "NotFound",
            &format!("the test server does not serve {}", parts.uri.path()),
        );
    };
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => return status_response(400, "BadRequest", &error.to_string()),
    };
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let call = Call {
        method: parts.method.clone(),
        kind,
        namespace,
        name,
        status_subresource,
        query: parse_query(parts.uri.query()),
        metadata_only: header("accept").contains("as=PartialObjectMetadata"),
        content_type: header("content-type"),
        body,
    };
    match (&call.method, call.name.is_some()) {
        (&Method::GET, false) if call.param("watch") == Some("true") => {
            super::watch::serve(state, call).await
        }
        (&Method::GET, false) => list(&state, &call).await,
        (&Method::POST, false) => create(&state, &call).await,
        (&Method::GET, true) => get(&state, &call).await,
        (&Method::PUT, true) => replace(&state, &call).await,
        (&Method::PATCH, true) => patch(&state, &call).await,
        (&Method::DELETE, true) => delete(&state, &call).await,
        _ => status_response(405, "MethodNotAllowed", "not served by the test server"),
    }
}

/// A continue token: the list's revision and the key its next page starts
/// at, hex-encoded (opaque to clients, as the API's are).
fn encode_continue(revision: i64, next: &[u8]) -> String {
    let mut text = format!("{revision}:");
    for byte in next {
        text.push_str(&format!("{byte:02x}"));
    }
    text
}

fn decode_continue(token: &str) -> Option<(i64, Vec<u8>)> {
    let (revision, hex) = token.split_once(':')?;
    let revision = revision.parse().ok()?;
    if hex.len() % 2 != 0 {
        return None;
    }
    let key = (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    Some((revision, key))
}

async fn list(state: &Arc<State>, call: &Call) -> Response<ResponseBody> {
    let selector = match call.selector() {
        Ok(selector) => selector,
        Err(error) => return status_response(400, "BadRequest", &error),
    };
    let limit = call
        .param("limit")
        .and_then(|limit| limit.parse::<u32>().ok())
        .filter(|&limit| limit > 0);
    let (revision, start) = match call.param("continue").filter(|token| !token.is_empty()) {
        Some(token) => match decode_continue(token) {
            Some((revision, start)) => (Some(revision), Some(start)),
            None => return status_response(400, "BadRequest", "invalid continue token"),
        },
        None => (None, None),
    };
    let collection = state
        .storage
        .collection(call.kind, call.namespace.as_deref());
    let page = match state
        .storage
        .page(&collection, start, revision, limit)
        .await
    {
        Ok(page) => page,
        Err(StoreError::Compacted) => {
            return status_response(
                410,
                "Expired",
                "The provided continue parameter is too old to display a consistent list result. \
                 You can start a new list without the continue parameter.",
            );
        }
        Err(error) => return store_error(error, call.kind.plural),
    };
    let continue_token = page
        .next
        .as_deref()
        .map(|next| encode_continue(page.revision, next));
    if continue_token.is_some() && state.faults.take_compact_after_page() {
        // The snapshot this token continues is gone before the next page.
        if let Err(error) = state.storage.compact().await {
            return store_error(error, "the compaction");
        }
    }
    let items: Vec<Value> = page
        .objects
        .into_iter()
        .filter(|(_, object)| selector.matches(object))
        .map(|(revision, object)| state.render(object, revision, call.metadata_only, false))
        .collect();
    let (kind, api_version) = if call.metadata_only {
        ("PartialObjectMetadataList".to_owned(), "meta.k8s.io/v1")
    } else {
        (format!("{}List", call.kind.kind), "v1")
    };
    let mut metadata = json!({ "resourceVersion": state.version(page.revision, false) });
    if let Some(token) = continue_token {
        metadata["continue"] = Value::String(token);
    }
    json_response(
        StatusCode::OK,
        &json!({ "kind": kind, "apiVersion": api_version, "metadata": metadata, "items": items }),
    )
}

async fn get(state: &Arc<State>, call: &Call) -> Response<ResponseBody> {
    let key = item_key(state, call);
    match state.storage.get(&key).await {
        Ok((revision, object)) => json_response(
            StatusCode::OK,
            &state.render(object, revision, call.metadata_only, false),
        ),
        Err(error) => store_error(error, &what(call)),
    }
}

fn item_key(state: &State, call: &Call) -> String {
    state.storage.key(
        call.kind,
        call.namespace.as_deref(),
        call.name.as_deref().unwrap_or(""),
    )
}

fn what(call: &Call) -> String {
    format!(
        "{} {:?}",
        call.kind.plural,
        call.name.as_deref().unwrap_or("")
    )
}

/// A request refused with `400 Bad Request`, saying why.
struct BadRequest(&'static str);

impl BadRequest {
    fn response(self) -> Response<ResponseBody> {
        status_response(400, "BadRequest", self.0)
    }
}

fn parse_body(call: &Call) -> Result<Value, BadRequest> {
    serde_json::from_slice::<Value>(&call.body)
        .ok()
        .filter(Value::is_object)
        .ok_or(BadRequest("the body is not a JSON object"))
}

/// `metadata.resourceVersion` of a written object, as a revision.
fn expected_version(object: &Value) -> Result<Option<i64>, BadRequest> {
    match object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
    {
        None | Some("") => Ok(None),
        Some(text) => super::parse_version(text)
            .map(Some)
            .ok_or(BadRequest("invalid resourceVersion")),
    }
}

async fn create(state: &Arc<State>, call: &Call) -> Response<ResponseBody> {
    let mut object = match parse_body(call) {
        Ok(object) => object,
        Err(refused) => return refused.response(),
    };
    object["kind"] = Value::String(call.kind.kind.to_owned());
    object["apiVersion"] = Value::String("v1".to_owned());
    let metadata = metadata_mut(&mut object).expect("an object");
    if let Some(namespace) = &call.namespace {
        metadata.insert("namespace".into(), Value::String(namespace.clone()));
    }
    let name = match (metadata.get("name"), metadata.get("generateName")) {
        (Some(Value::String(name)), _) if !name.is_empty() => name.clone(),
        (_, Some(Value::String(base))) => {
            let name = format!("{base}{}", state.next_suffix());
            metadata.insert("name".into(), Value::String(name.clone()));
            name
        }
        _ => return status_response(422, "Invalid", "metadata.name is required"),
    };
    let key = state
        .storage
        .key(call.kind, call.namespace.as_deref(), &name);
    match state.storage.create(&key, object).await {
        Ok((revision, object)) => json_response(
            StatusCode::CREATED,
            &state.render(object, revision, false, false),
        ),
        Err(error) => store_error(error, &format!("{} {name:?}", call.kind.plural)),
    }
}

/// `current` with `update` written over it: the whole object, or only its
/// `status` through the status subresource (the rest of a status write is
/// ignored, as the API does). Identity fields stay the stored ones.
fn merge_write(call: &Call, current: &Value, mut update: Value) -> Value {
    if call.status_subresource {
        let mut merged = current.clone();
        merged["status"] = update.get("status").cloned().unwrap_or(Value::Null);
        return merged;
    }
    for field in ["uid", "creationTimestamp", "name", "namespace"] {
        if let Some(value) = current.pointer(&format!("/metadata/{field}")) {
            if let Some(metadata) = metadata_mut(&mut update) {
                metadata.insert(field.into(), value.clone());
            }
        }
    }
    update["kind"] = current["kind"].clone();
    update["apiVersion"] = current["apiVersion"].clone();
    update
}

async fn replace(state: &Arc<State>, call: &Call) -> Response<ResponseBody> {
    let update = match parse_body(call) {
        Ok(object) => object,
        Err(refused) => return refused.response(),
    };
    let expected = match expected_version(&update) {
        Ok(expected) => expected,
        Err(refused) => return refused.response(),
    };
    let key = item_key(state, call);
    let (revision, current) = match state.storage.get(&key).await {
        Ok(found) => found,
        Err(error) => return store_error(error, &what(call)),
    };
    let merged = merge_write(call, &current, update);
    match state
        .storage
        .update(&key, merged, Some(expected.unwrap_or(revision)))
        .await
    {
        Ok((revision, object)) => json_response(
            StatusCode::OK,
            &state.render(object, revision, false, false),
        ),
        Err(error) => store_error(error, &what(call)),
    }
}

/// RFC 7386 JSON merge patch.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    let target = target.as_object_mut().expect("an object");
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
        } else {
            merge_patch(target.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

async fn patch(state: &Arc<State>, call: &Call) -> Response<ResponseBody> {
    if !call.content_type.contains("merge-patch+json") {
        return status_response(
            415,
            "UnsupportedMediaType",
            "the test server applies JSON merge patches only",
        );
    }
    let patch = match parse_body(call) {
        Ok(patch) => patch,
        Err(refused) => return refused.response(),
    };
    let expected = match expected_version(&patch) {
        Ok(expected) => expected,
        Err(refused) => return refused.response(),
    };
    let key = item_key(state, call);
    loop {
        let (revision, current) = match state.storage.get(&key).await {
            Ok(found) => found,
            Err(error) => return store_error(error, &what(call)),
        };
        let mut patched = current.clone();
        merge_patch(&mut patched, &patch);
        let merged = merge_write(call, &current, patched);
        match state
            .storage
            .update(&key, merged, Some(expected.unwrap_or(revision)))
            .await
        {
            Ok((revision, object)) => {
                return json_response(
                    StatusCode::OK,
                    &state.render(object, revision, false, false),
                );
            }
            // Someone wrote in between: a patch without a version applies
            // to the latest object.
            Err(StoreError::Conflict) if expected.is_none() => continue,
            Err(error) => return store_error(error, &what(call)),
        }
    }
}

async fn delete(state: &Arc<State>, call: &Call) -> Response<ResponseBody> {
    let key = item_key(state, call);
    match state.storage.delete(&key).await {
        Ok((revision, object)) => json_response(
            StatusCode::OK,
            &state.render(object, revision, false, false),
        ),
        Err(error) => store_error(error, &what(call)),
    }
}
