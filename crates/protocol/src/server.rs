//! The socket loops of the Jupyter kernel: control (interrupt, shutdown; answered while a cell
//! runs), iopub (one publisher task), stdin (input requests) and heartbeat (echo); the shell
//! channel lives in [`super::shell`]. Also what both share: the [`Kernel`] state, verified
//! receiving and routed replies.
//!
//! Every message is verified by [`Message::from_frames`]; what fails verification or parsing is
//! logged and dropped, never executed and never a crash. The interpreter runs on blocking
//! threads so that control and shell messages are served while a cell runs.

use super::history::History;
use super::wire::{Message, Signer};
use super::{CellIo, Interpreter, KernelInfo};
use crate::output::CellOutput;
use anyhow::Context;
use bytes::Bytes;
use jupyter_protocol::ConnectionInfo;
use ring::hmac;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use zeromq::{SocketRecv, SocketSend};

/// One message for the iopub task.
struct IopubItem {
    msg_type: &'static str,
    parent: Option<Arc<Message>>,
    content: Value,
}

/// Sends messages on iopub from any thread, in order.
#[derive(Clone)]
pub(crate) struct Publisher {
    tx: mpsc::UnboundedSender<IopubItem>,
}

impl Publisher {
    pub(crate) fn send(
        &self,
        msg_type: &'static str,
        parent: Option<&Arc<Message>>,
        content: Value,
    ) {
        // The receiver only goes away when the process is shutting down.
        let _ = self.tx.send(IopubItem {
            msg_type,
            parent: parent.cloned(),
            content,
        });
    }

    pub(crate) fn status(&self, state: &str, parent: &Arc<Message>) {
        self.send("status", Some(parent), json!({ "execution_state": state }));
    }
}

/// A pending `input_request`.
pub(crate) struct InputAsk {
    identities: Vec<Bytes>,
    parent: Arc<Message>,
    prompt: String,
    password: bool,
    reply: std::sync::mpsc::Sender<Result<String, String>>,
}

/// The [`CellIo`] of one execute request.
pub(crate) struct ShellCellIo {
    pub(crate) publisher: Publisher,
    pub(crate) parent: Arc<Message>,
    pub(crate) stdin: Option<mpsc::UnboundedSender<InputAsk>>,
}

impl CellIo for ShellCellIo {
    fn publish(&self, output: CellOutput) {
        let p = Some(&self.parent);
        match output {
            CellOutput::Stdout(text) => self
                .publisher
                .send("stream", p, json!({"name": "stdout", "text": text})),
            CellOutput::Stderr(text) => self
                .publisher
                .send("stream", p, json!({"name": "stderr", "text": text})),
            CellOutput::Display {
                data,
                metadata,
                display_id,
            } => {
                let transient = match display_id {
                    Some(id) => json!({ "display_id": id }),
                    None => json!({}),
                };
                self.publisher.send(
                    "display_data",
                    p,
                    json!({"data": data, "metadata": metadata, "transient": transient}),
                )
            }
            CellOutput::UpdateDisplay {
                data,
                metadata,
                display_id,
            } => self.publisher.send(
                "update_display_data",
                p,
                json!({"data": data, "metadata": metadata, "transient": {"display_id": display_id}}),
            ),
            CellOutput::Clear { wait } => {
                self.publisher
                    .send("clear_output", p, json!({ "wait": wait }))
            }
        }
    }

    fn input(&self, prompt: &str, password: bool) -> Result<String, String> {
        let Some(stdin) = &self.stdin else {
            return Err(
                "this front end does not accept input requests (allow_stdin is false)".into(),
            );
        };
        let (tx, rx) = std::sync::mpsc::channel();
        stdin
            .send(InputAsk {
                identities: self.parent.identities.clone(),
                parent: self.parent.clone(),
                prompt: prompt.to_string(),
                password,
                reply: tx,
            })
            .map_err(|_| "the stdin channel is closed".to_string())?;
        rx.recv().map_err(|_| "no input reply came".to_string())?
    }
}

/// Shared state of the loops.
pub(crate) struct Kernel {
    pub(crate) interpreter: Arc<dyn Interpreter>,
    pub(crate) signer: Signer,
    pub(crate) publisher: Publisher,
    pub(crate) stdin: mpsc::UnboundedSender<InputAsk>,
    pub(crate) history: std::sync::Mutex<History>,
    pub(crate) execution_count: std::sync::atomic::AtomicU64,
    /// Signatures of the messages received on shell and control, to drop replays.
    digests: std::sync::Mutex<super::wire::DigestHistory>,
}

/// The stack of the threads that run the interpreter's calls (`execute`, `complete`, …): room
/// for an interpreter that recurses, boundedly, on what a user typed.
pub const INTERPRETER_STACK_BYTES: usize = 8 << 20;

/// Run the Jupyter kernel described by `connection_file` until a shutdown request.
pub fn serve(connection_file: &Path, interpreter: Arc<dyn Interpreter>) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(connection_file)
        .with_context(|| format!("reading connection file {}", connection_file.display()))?;
    let info: ConnectionInfo = serde_json::from_str(&text)
        .with_context(|| format!("parsing connection file {}", connection_file.display()))?;
    if !info.key.is_empty() && info.signature_scheme != "hmac-sha256" {
        anyhow::bail!(
            "unsupported signature scheme {:?} (only hmac-sha256)",
            info.signature_scheme
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(INTERPRETER_STACK_BYTES)
        .enable_all()
        .build()?;
    runtime.block_on(serve_async(info, interpreter))
}

async fn serve_async(
    info: ConnectionInfo,
    interpreter: Arc<dyn Interpreter>,
) -> anyhow::Result<()> {
    let session = uuid::Uuid::new_v4().to_string();
    let key =
        (!info.key.is_empty()).then(|| hmac::Key::new(hmac::HMAC_SHA256, info.key.as_bytes()));
    let signer = Signer::new(key, session.clone());

    let iopub = jupyter_zmq_client::create_kernel_iopub_connection(&info, &session).await?;
    let shell = jupyter_zmq_client::create_kernel_shell_connection(&info, &session).await?;
    let control = jupyter_zmq_client::create_kernel_control_connection(&info, &session).await?;
    let stdin = jupyter_zmq_client::create_kernel_stdin_connection(&info, &session).await?;
    let heartbeat = jupyter_zmq_client::create_kernel_heartbeat_connection(&info).await?;

    let (iopub_tx, iopub_rx) = mpsc::unbounded_channel();
    let (stdin_tx, stdin_rx) = mpsc::unbounded_channel();
    let kernel = Arc::new(Kernel {
        interpreter,
        signer: signer.clone(),
        publisher: Publisher { tx: iopub_tx },
        stdin: stdin_tx,
        history: std::sync::Mutex::new(History::default()),
        execution_count: std::sync::atomic::AtomicU64::new(0),
        digests: std::sync::Mutex::new(Default::default()),
    });

    tokio::spawn(iopub_loop(iopub.socket, signer.clone(), iopub_rx));
    tokio::spawn(heartbeat_loop(heartbeat.socket));
    tokio::spawn(stdin_loop(stdin.socket, signer.clone(), stdin_rx));
    tokio::spawn(control_loop(control.socket, kernel.clone()));
    tokio::spawn(sigint_loop(kernel.clone()));
    kernel
        .publisher
        .send("status", None, json!({"execution_state": "starting"}));
    super::shell::shell_loop(shell.socket, kernel).await
}

async fn iopub_loop(
    mut socket: zeromq::PubSocket,
    signer: Signer,
    mut rx: mpsc::UnboundedReceiver<IopubItem>,
) {
    while let Some(item) = rx.recv().await {
        let topic = Bytes::from(format!("kernel.nbcuda.{}", item.msg_type).into_bytes());
        let frames = signer.frames(
            &[topic],
            item.msg_type,
            item.parent.as_deref(),
            item.content,
        );
        if let Err(e) = socket.send(frames).await {
            tracing::warn!("iopub send failed: {e}");
        }
    }
}

async fn heartbeat_loop(mut socket: zeromq::RepSocket) {
    loop {
        match socket.recv().await {
            Ok(ping) => {
                if let Err(e) = socket.send(ping).await {
                    tracing::warn!("heartbeat send failed: {e}");
                }
            }
            Err(e) => {
                tracing::warn!("heartbeat receive failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn stdin_loop(
    mut socket: zeromq::RouterSocket,
    signer: Signer,
    mut rx: mpsc::UnboundedReceiver<InputAsk>,
) {
    while let Some(ask) = rx.recv().await {
        let frames = signer.frames(
            &ask.identities,
            "input_request",
            Some(&ask.parent),
            json!({"prompt": ask.prompt, "password": ask.password}),
        );
        if let Err(e) = socket.send(frames).await {
            let _ = ask
                .reply
                .send(Err(format!("could not send input_request: {e}")));
            continue;
        }
        let answer = loop {
            match socket.recv().await {
                Ok(frames) => match Message::from_frames(frames, signer.key()) {
                    // Only the client whose cell asked answers (several may be attached).
                    Ok(m) if m.msg_type() == "input_reply" && m.identities == ask.identities => {
                        break Ok(m.str_field("value", "").to_string())
                    }
                    Ok(m) if m.msg_type() == "input_reply" => {
                        tracing::warn!("dropped an input_reply from a client that was not asked")
                    }
                    Ok(m) => tracing::warn!("unexpected {} on stdin", m.msg_type()),
                    Err(e) => tracing::warn!("dropped a stdin message: {e}"),
                },
                Err(e) => break Err(format!("stdin receive failed: {e}")),
            }
        };
        let _ = ask.reply.send(answer);
    }
}

async fn sigint_loop(kernel: Arc<Kernel>) {
    let Ok(mut signals) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
    else {
        return;
    };
    while signals.recv().await.is_some() {
        tracing::info!("SIGINT: interrupting the running cell");
        kernel.interpreter.interrupt();
    }
}

/// Send the reply to `request` to the client that sent it (its routing identities).
pub(crate) async fn send_reply<S: SocketSend + Send>(
    socket: &mut S,
    kernel: &Kernel,
    request: &Message,
    msg_type: &str,
    content: Value,
) {
    let frames = kernel
        .signer
        .frames(&request.identities, msg_type, Some(request), content);
    if let Err(e) = socket.send(frames).await {
        tracing::warn!("sending {msg_type} failed: {e}");
    }
}

/// The next verified, fresh message on a ROUTER socket (`None`: one was dropped).
pub(crate) async fn receive<S: SocketRecv + Send>(
    socket: &mut S,
    kernel: &Kernel,
    channel: &str,
) -> Option<Message> {
    match socket.recv().await {
        Ok(frames) => match Message::from_frames(frames, kernel.signer.key()) {
            Ok(m) => {
                let fresh = kernel
                    .digests
                    .lock()
                    .map(|mut d| d.first_time(&m.signature))
                    .unwrap_or(true);
                if fresh {
                    Some(m)
                } else {
                    tracing::warn!(
                        "dropped a replayed {channel} message (its signature was seen before)"
                    );
                    None
                }
            }
            Err(e) => {
                tracing::warn!("dropped a {channel} message: {e}");
                None
            }
        },
        Err(e) => {
            tracing::warn!("{channel} receive failed: {e}");
            tokio::time::sleep(Duration::from_millis(50)).await;
            None
        }
    }
}

async fn control_loop(mut socket: zeromq::RouterSocket, kernel: Arc<Kernel>) {
    loop {
        let Some(msg) = receive(&mut socket, &kernel, "control").await else {
            continue;
        };
        let msg = Arc::new(msg);
        kernel.publisher.status("busy", &msg);
        match msg.msg_type() {
            "interrupt_request" => {
                kernel.interpreter.interrupt();
                send_reply(
                    &mut socket,
                    &kernel,
                    &msg,
                    "interrupt_reply",
                    json!({"status": "ok"}),
                )
                .await;
            }
            "shutdown_request" => {
                shutdown(&mut socket, &kernel, &msg).await;
            }
            "kernel_info_request" => {
                let content = kernel_info_content(&kernel.interpreter.kernel_info());
                send_reply(&mut socket, &kernel, &msg, "kernel_info_reply", content).await;
            }
            "debug_request" => {
                let content = json!({
                    "type": "response", "request_seq": msg.content.get("seq").cloned().unwrap_or(json!(0)),
                    "success": false, "command": msg.str_field("command", ""),
                    "message": "this Jupyter kernel has no debugger"
                });
                send_reply(&mut socket, &kernel, &msg, "debug_reply", content).await;
            }
            other => tracing::warn!("ignored control message of unknown type {other:?}"),
        }
        kernel.publisher.status("idle", &msg);
    }
}

pub(crate) async fn shutdown<S: SocketSend + Send>(
    socket: &mut S,
    kernel: &Kernel,
    msg: &Arc<Message>,
) {
    let restart = msg.bool_field("restart", false);
    let content = json!({"status": "ok", "restart": restart});
    send_reply(socket, kernel, msg, "shutdown_reply", content.clone()).await;
    kernel.publisher.send("shutdown_reply", Some(msg), content);
    kernel.interpreter.interrupt();
    kernel.interpreter.shutdown(restart);
    kernel.publisher.status("idle", msg);
    // Let iopub flush, then leave.
    tokio::time::sleep(Duration::from_millis(100)).await;
    std::process::exit(0);
}

pub(crate) fn kernel_info_content(info: &KernelInfo) -> Value {
    let links: Vec<Value> = info
        .help_links
        .iter()
        .map(|(text, url)| json!({"text": text, "url": url}))
        .collect();
    json!({
        "status": "ok",
        "protocol_version": super::PROTOCOL_VERSION,
        "implementation": info.implementation,
        "implementation_version": info.implementation_version,
        "language_info": info.language_info,
        "banner": info.banner,
        "help_links": links,
        "debugger": false,
    })
}

/// Convert a cursor in Unicode code points (the protocol's unit) into a byte offset.
pub(crate) fn char_to_byte(code: &str, chars: i64) -> usize {
    let chars = chars.max(0) as usize;
    code.char_indices()
        .nth(chars)
        .map(|(b, _)| b)
        .unwrap_or(code.len())
}

pub(crate) fn byte_to_char(code: &str, byte: usize) -> usize {
    let byte = byte.min(code.len());
    code.char_indices().take_while(|(b, _)| *b < byte).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_conversions() {
        let code = "let é = 1; é";
        let b = char_to_byte(code, 12);
        assert_eq!(&code[b..], "");
        assert_eq!(byte_to_char(code, code.len()), 12);
        assert_eq!(char_to_byte(code, 5), "let é".len());
        assert_eq!(char_to_byte(code, -3), 0);
    }
}
