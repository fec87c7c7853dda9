//! The shell channel with any number of clients: one receive loop that never waits for a cell,
//! one queue of execute requests run one at a time in arrival order, and every other request
//! answered at once on a task of its own.
//!
//! Several front ends may talk to one Jupyter kernel (a notebook and `jupyter console
//! --existing`, a grader beside the browser): each is a ZeroMQ peer of the shell ROUTER socket
//! with its own routing identity and session. What this module guarantees:
//! - every reply goes to the identities of the request it answers, with that request's header
//!   as parent (the ROUTER socket routes by the first frames);
//! - execute requests from all clients run one at a time, in the order the socket received
//!   them, none dropped, each counted in `execution_count`;
//! - requests that run no code (`kernel_info`, `complete`, `inspect`, `is_complete`, `history`,
//!   `comm_info`, comms) are served while a cell runs; the interpreter answers `complete` and
//!   `inspect` without waiting for the running cell (its own business, see `Interpreter`);
//! - after a failed cell with `stop_on_error`, only the same client's execute requests that
//!   were queued before the failure are aborted: another client's cells still run.
//!
//! It knows nothing of the language: everything goes through [`Interpreter`].

use super::server::{
    byte_to_char, char_to_byte, kernel_info_content, receive, send_reply, shutdown, Kernel,
    ShellCellIo,
};
use super::{CellIo, ExecuteOutcome};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use zeromq::{RouterSendHalf, RouterSocket, Socket, SocketEvent};

use super::wire::Message;

/// After a failed cell (with `stop_on_error`), how long requests still in flight count as
/// queued: a request that arrives this soon after the failure and was sent before it (by its
/// header's date) is aborted too.
const ABORT_WINDOW: Duration = Duration::from_millis(20);

/// An execute request waiting for its turn.
struct Queued {
    msg: Arc<Message>,
    received: Instant,
}

/// A failed cell of one client (session), whose queued cells are aborted.
struct Failure {
    /// When the kernel took the failure (its own clock).
    at: Instant,
    /// The same moment in UTC, for requests still in flight (their header's date).
    at_utc: chrono::DateTime<chrono::Utc>,
}

impl Failure {
    /// Was `q` queued before this failure was reported?
    fn covers(&self, q: &Queued) -> bool {
        q.received <= self.at
            || (q.received <= self.at + ABORT_WINDOW && sent_before(&q.msg, self.at_utc))
    }
}

/// Was this request sent before `failed_at`? (A request without a readable date counts as
/// sent before.)
fn sent_before(msg: &Message, failed_at: chrono::DateTime<chrono::Utc>) -> bool {
    msg.header
        .get("date")
        .and_then(Value::as_str)
        .and_then(|d| chrono::DateTime::parse_from_rfc3339(d).ok())
        .is_none_or(|d| d.with_timezone(&chrono::Utc) <= failed_at)
}

/// The shell channel: receives forever, queues execute requests, serves the rest at once.
pub(crate) async fn shell_loop(
    mut socket: RouterSocket,
    kernel: Arc<Kernel>,
) -> anyhow::Result<()> {
    tokio::spawn(warn_of_shared_identities(socket.monitor()));
    let (sender, mut receiver) = socket.split();
    let (queue, queued) = mpsc::unbounded_channel();
    tokio::spawn(run_queue(sender.clone(), kernel.clone(), queued));
    loop {
        let Some(msg) = receive(&mut receiver, &kernel, "shell").await else {
            continue;
        };
        let msg = Arc::new(msg);
        match msg.msg_type() {
            "execute_request" => {
                let q = Queued {
                    msg,
                    received: Instant::now(),
                };
                if queue.send(q).is_err() {
                    anyhow::bail!("the execute queue stopped");
                }
            }
            "shutdown_request" => {
                let mut sender = sender.clone();
                shutdown(&mut sender, &kernel, &msg).await;
            }
            _ => {
                let sender = sender.clone();
                let kernel = kernel.clone();
                tokio::spawn(async move { answer(sender, &kernel, msg).await });
            }
        }
    }
}

/// Logs a warning when a client connects with the routing identity of one still connected.
/// jupyter_client takes its session's id as identity, so two clients that share a session (two
/// `KernelManager.client()` of one manager) cannot be told apart: replies go to the newer
/// connection and the older one's requests are no longer read (libzmq, under ipykernel, ignores
/// the newer one instead). Each client needs a session of its own.
async fn warn_of_shared_identities(mut events: futures::channel::mpsc::Receiver<SocketEvent>) {
    use futures::StreamExt;
    let mut connected: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut warned = std::collections::HashSet::new();
    while let Some(event) = events.next().await {
        match event {
            SocketEvent::Accepted(_, peer) => {
                let n = connected.entry(peer.to_vec()).or_default();
                *n += 1;
                // Once per identity: the two connections then keep replacing each other.
                if *n > 1 && warned.insert(peer.to_vec()) {
                    tracing::warn!(
                        "two shell clients share the routing identity {:?} (one session): \
                         their replies cannot be told apart; give each client its own session",
                        String::from_utf8_lossy(&peer)
                    );
                }
            }
            SocketEvent::Disconnected(peer) => {
                if let Some(n) = connected.get_mut(peer.as_ref()) {
                    *n = n.saturating_sub(1);
                }
            }
            _ => {}
        }
    }
}

/// Runs the execute requests one at a time, in arrival order.
async fn run_queue(
    mut sender: RouterSendHalf,
    kernel: Arc<Kernel>,
    mut queued: mpsc::UnboundedReceiver<Queued>,
) {
    // The last failure of each client (session) whose queued cells are to be aborted.
    let mut failures: HashMap<String, Failure> = HashMap::new();
    while let Some(q) = queued.recv().await {
        let session = q.msg.session().to_string();
        kernel.publisher.status("busy", &q.msg);
        if failures.get(&session).is_some_and(|f| f.covers(&q)) {
            send_aborted(&mut sender, &kernel, &q.msg).await;
        } else {
            failures.remove(&session);
            if let Some(at_utc) = execute(&mut sender, &kernel, &q.msg).await {
                let at = Instant::now();
                failures.insert(session, Failure { at, at_utc });
            }
        }
        kernel.publisher.status("idle", &q.msg);
    }
}

async fn send_aborted(sender: &mut RouterSendHalf, kernel: &Kernel, msg: &Arc<Message>) {
    let count = kernel
        .execution_count
        .load(std::sync::atomic::Ordering::SeqCst);
    send_reply(
        sender,
        kernel,
        msg,
        "execute_reply",
        json!({"status": "aborted", "execution_count": count, "user_expressions": {}, "payload": []}),
    )
    .await;
}

/// Serve one request that runs no code.
async fn answer(mut sender: RouterSendHalf, kernel: &Arc<Kernel>, msg: Arc<Message>) {
    let msg_type = msg.msg_type().to_string();
    let known = matches!(
        msg_type.as_str(),
        "kernel_info_request"
            | "complete_request"
            | "inspect_request"
            | "is_complete_request"
            | "history_request"
            | "comm_info_request"
            | "comm_open"
            | "comm_msg"
            | "comm_close"
    );
    if !known {
        tracing::warn!("ignored shell message of unknown type {msg_type:?}");
        return;
    }
    kernel.publisher.status("busy", &msg);
    let reply = match msg_type.as_str() {
        "kernel_info_request" => Some((
            "kernel_info_reply",
            kernel_info_content(&kernel.interpreter.kernel_info()),
        )),
        "complete_request" => Some(("complete_reply", complete(kernel, &msg).await)),
        "inspect_request" => Some(("inspect_reply", inspect(kernel, &msg).await)),
        "is_complete_request" => Some(("is_complete_reply", is_complete(kernel, &msg).await)),
        "history_request" => {
            let history = match kernel.history.lock() {
                Ok(h) => h.query(&msg.content),
                Err(_) => Vec::new(),
            };
            Some(("history_reply", json!({"status": "ok", "history": history})))
        }
        "comm_info_request" => Some(("comm_info_reply", json!({"status": "ok", "comms": {}}))),
        "comm_open" => {
            // No comm targets are registered: close it, as the protocol asks.
            let comm_id = msg.content.get("comm_id").cloned().unwrap_or(json!(""));
            kernel.publisher.send(
                "comm_close",
                Some(&msg),
                json!({"comm_id": comm_id, "data": {}}),
            );
            None
        }
        _ => None, // comm_msg, comm_close: nothing is open.
    };
    if let Some((reply_type, content)) = reply {
        send_reply(&mut sender, kernel, &msg, reply_type, content).await;
    }
    kernel.publisher.status("idle", &msg);
}

async fn complete(kernel: &Arc<Kernel>, msg: &Message) -> Value {
    let code = msg.str_field("code", "").to_string();
    let cursor = char_to_byte(
        &code,
        msg.int_field("cursor_pos", code.chars().count() as i64),
    );
    let interp = kernel.interpreter.clone();
    let code2 = code.clone();
    let (matches, start, end) =
        tokio::task::spawn_blocking(move || interp.complete(&code2, cursor))
            .await
            .unwrap_or_else(|_| (Vec::new(), cursor, cursor));
    json!({
        "status": "ok", "matches": matches,
        "cursor_start": byte_to_char(&code, start), "cursor_end": byte_to_char(&code, end),
        "metadata": {}
    })
}

async fn inspect(kernel: &Arc<Kernel>, msg: &Message) -> Value {
    let code = msg.str_field("code", "").to_string();
    let cursor = char_to_byte(
        &code,
        msg.int_field("cursor_pos", code.chars().count() as i64),
    );
    let detail = msg.int_field("detail_level", 0).clamp(0, 1) as u8;
    let interp = kernel.interpreter.clone();
    let found = tokio::task::spawn_blocking(move || interp.inspect(&code, cursor, detail))
        .await
        .ok()
        .flatten();
    match found {
        Some(data) => json!({"status": "ok", "found": true, "data": data, "metadata": {}}),
        None => json!({"status": "ok", "found": false, "data": {}, "metadata": {}}),
    }
}

async fn is_complete(kernel: &Arc<Kernel>, msg: &Message) -> Value {
    let code = msg.str_field("code", "").to_string();
    let interp = kernel.interpreter.clone();
    let (status, indent) = tokio::task::spawn_blocking(move || interp.is_complete(&code))
        .await
        .unwrap_or_else(|_| ("unknown".into(), String::new()));
    let mut content = json!({"status": status});
    if status == "incomplete" {
        content["indent"] = json!(indent);
    }
    content
}

/// When a failed execution with `stop_on_error` was answered (taken before the reply is sent).
type FailedAt = Option<chrono::DateTime<chrono::Utc>>;

/// Run one cell: `execute_input`, the interpreter, the result or error on iopub, the history,
/// the reply. Returns the time of the failure when it failed with `stop_on_error`.
async fn execute(
    sender: &mut RouterSendHalf,
    kernel: &Arc<Kernel>,
    msg: &Arc<Message>,
) -> FailedAt {
    use std::sync::atomic::Ordering;
    let code = msg.str_field("code", "").to_string();
    let silent = msg.bool_field("silent", false);
    let store_history = msg.bool_field("store_history", !silent) && !silent;
    let allow_stdin = msg.bool_field("allow_stdin", false);
    let stop_on_error = msg.bool_field("stop_on_error", true);
    let count = if store_history {
        kernel.execution_count.fetch_add(1, Ordering::SeqCst) + 1
    } else {
        kernel.execution_count.load(Ordering::SeqCst)
    };
    if !silent {
        kernel.publisher.send(
            "execute_input",
            Some(msg),
            json!({"code": code, "execution_count": count}),
        );
    }
    let io: Arc<dyn CellIo> = Arc::new(ShellCellIo {
        publisher: kernel.publisher.clone(),
        parent: msg.clone(),
        stdin: allow_stdin.then(|| kernel.stdin.clone()),
    });
    let interp = kernel.interpreter.clone();
    let code2 = code.clone();
    let outcome = tokio::task::spawn_blocking(move || interp.execute(&code2, count, io))
        .await
        .unwrap_or_else(|e| ExecuteOutcome::Error {
            ename: "InternalError".into(),
            evalue: format!("the cell's thread failed: {e}"),
            traceback: vec![format!("InternalError: the cell's thread failed: {e}")],
        });
    let mut output_text = None;
    let (reply, failed) = match outcome {
        ExecuteOutcome::Ok(result) => {
            if let Some(data) = result {
                output_text = data
                    .get("text/plain")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                if !silent {
                    kernel.publisher.send(
                        "execute_result",
                        Some(msg),
                        json!({"execution_count": count, "data": data, "metadata": Map::new()}),
                    );
                }
            }
            (
                json!({"status": "ok", "execution_count": count, "user_expressions": {}, "payload": []}),
                None,
            )
        }
        ExecuteOutcome::Page(data) => (
            json!({"status": "ok", "execution_count": count, "user_expressions": {},
                   "payload": [{"source": "page", "data": data, "start": 0}]}),
            None,
        ),
        ExecuteOutcome::Error {
            ename,
            evalue,
            traceback,
        } => {
            kernel.publisher.send(
                "error",
                Some(msg),
                json!({"ename": ename.as_str(), "evalue": evalue, "traceback": traceback}),
            );
            (
                json!({"status": "error", "execution_count": count, "ename": ename.as_str(),
                       "evalue": evalue, "traceback": traceback, "user_expressions": {}, "payload": []}),
                stop_on_error.then(chrono::Utc::now),
            )
        }
    };
    if store_history {
        if let Ok(mut h) = kernel.history.lock() {
            h.push(count, &code, output_text);
        }
    }
    send_reply(sender, kernel, msg, "execute_reply", reply).await;
    failed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(date: &str) -> Arc<Message> {
        Arc::new(Message {
            identities: Vec::new(),
            header: json!({"msg_type": "execute_request", "session": "a", "date": date}),
            parent_header: json!({}),
            metadata: json!({}),
            content: json!({}),
            buffers: Vec::new(),
            signature: bytes::Bytes::new(),
        })
    }

    #[test]
    fn a_failure_aborts_what_was_queued_before_it_and_nothing_after() {
        let at = Instant::now();
        let at_utc = chrono::Utc::now();
        let failure = Failure { at, at_utc };
        let before = (at_utc - chrono::Duration::milliseconds(5)).to_rfc3339();
        let after = (at_utc + chrono::Duration::milliseconds(5)).to_rfc3339();
        // Queued while the failed cell ran: aborted whatever its date says.
        let queued = Queued {
            msg: request(&after),
            received: at - Duration::from_millis(100),
        };
        assert!(failure.covers(&queued));
        // In flight: arrived just after the failure, sent before it.
        let in_flight = Queued {
            msg: request(&before),
            received: at + Duration::from_millis(5),
        };
        assert!(failure.covers(&in_flight));
        // Sent after the failure was reported: runs.
        let later = Queued {
            msg: request(&after),
            received: at + Duration::from_millis(5),
        };
        assert!(!failure.covers(&later));
        // Arrived well after the window: runs, whatever its date.
        let late = Queued {
            msg: request(&before),
            received: at + Duration::from_millis(500),
        };
        assert!(!failure.covers(&late));
    }
}
