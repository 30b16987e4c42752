use std::collections::BTreeMap;
use std::path::PathBuf;

use keel_protocol::exec_server::*;
use keel_protocol::{
    Base64Bytes, ExecSessionId, JsonRpcFraming, JsonRpcMessage, JsonRpcRequest, JsonRpcResponse,
    MethodTable, RequestId, RpcNotification, RpcRequest,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn sid() -> ExecSessionId {
    ExecSessionId::new("session-1")
}

/// One sample per request variant with the exact params JSON it must produce.
fn request_cases() -> Vec<(ExecServerRequest, &'static str, Value)> {
    vec![
        (
            ExecServerRequest::Initialize(InitializeParams {
                client_name: "example".into(),
            }),
            "initialize",
            json!({"clientName": "example"}),
        ),
        (
            ExecServerRequest::Exec(ExecParams {
                argv: vec!["bash".into(), "-lc".into(), "echo hi".into()],
                cwd: PathBuf::from("/tmp"),
                env: BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]),
                tty: true,
                arg0: None,
                traceparent: None,
            }),
            "command/exec",
            json!({"argv": ["bash", "-lc", "echo hi"], "cwd": "/tmp",
                   "env": {"PATH": "/usr/bin:/bin"}, "tty": true, "arg0": null}),
        ),
        (
            ExecServerRequest::Exec(ExecParams {
                argv: vec!["true".into()],
                cwd: PathBuf::from("/"),
                env: BTreeMap::new(),
                tty: false,
                arg0: None,
                traceparent: Some(
                    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_string(),
                ),
            }),
            "command/exec",
            json!({"argv": ["true"], "cwd": "/", "env": {}, "tty": false, "arg0": null,
                   "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}),
        ),
        (
            ExecServerRequest::Write(WriteParams {
                session_id: sid(),
                chunk: Base64Bytes::from(b"hi\n".as_slice()),
            }),
            "command/exec/write",
            json!({"sessionId": "session-1", "chunk": "aGkK"}),
        ),
        (
            ExecServerRequest::Terminate(TerminateParams {
                session_id: sid(),
                mode: None,
            }),
            "command/exec/terminate",
            json!({"sessionId": "session-1"}),
        ),
        (
            ExecServerRequest::Terminate(TerminateParams {
                session_id: sid(),
                mode: Some(TerminateMode::Graceful { timeout_ms: 500 }),
            }),
            "command/exec/terminate",
            json!({"sessionId": "session-1", "mode": {"graceful": {"timeoutMs": 500}}}),
        ),
        (
            ExecServerRequest::Terminate(TerminateParams {
                session_id: sid(),
                mode: Some(TerminateMode::Force),
            }),
            "command/exec/terminate",
            json!({"sessionId": "session-1", "mode": "force"}),
        ),
        (
            ExecServerRequest::Resize(ResizeParams {
                session_id: sid(),
                rows: 40,
                cols: 120,
            }),
            "command/exec/resize",
            json!({"sessionId": "session-1", "rows": 40, "cols": 120}),
        ),
        (
            ExecServerRequest::CloseStdin(CloseStdinParams { session_id: sid() }),
            "command/exec/closeStdin",
            json!({"sessionId": "session-1"}),
        ),
        (
            ExecServerRequest::Wait(WaitParams {
                session_id: sid(),
                timeout_ms: Some(250),
            }),
            "command/exec/wait",
            json!({"sessionId": "session-1", "timeoutMs": 250}),
        ),
        (
            ExecServerRequest::Snapshot(SnapshotParams { session_id: sid() }),
            "command/exec/snapshot",
            json!({"sessionId": "session-1"}),
        ),
        (
            ExecServerRequest::PatchPlan(PatchParams {
                patch: "*** Begin Patch\n*** End Patch\n".to_string(),
                cwd: PathBuf::from("/work"),
                sandbox_policy: Some(keel_protocol::SandboxPolicy::ReadOnly),
                tmpdir: None,
                allow_git_writes: false,
                expected_before: None,
            }),
            "patch/plan",
            json!({
                "patch": "*** Begin Patch\n*** End Patch\n",
                "cwd": "/work",
                "sandboxPolicy": {"type": "read-only"},
                "allowGitWrites": false,
            }),
        ),
        (
            ExecServerRequest::PatchApply(PatchParams {
                patch: "*** Begin Patch\n*** End Patch\n".to_string(),
                cwd: PathBuf::from("/work"),
                sandbox_policy: None,
                tmpdir: Some(PathBuf::from("/tmp/t")),
                allow_git_writes: true,
                expected_before: Some(BTreeMap::from([
                    (PathBuf::from("/work/a.txt"), Some("old\n".to_string())),
                    (PathBuf::from("/work/new.txt"), None),
                ])),
            }),
            "patch/apply",
            json!({
                "patch": "*** Begin Patch\n*** End Patch\n",
                "cwd": "/work",
                "tmpdir": "/tmp/t",
                "allowGitWrites": true,
                "expectedBefore": {"/work/a.txt": "old\n", "/work/new.txt": null},
            }),
        ),
        (
            ExecServerRequest::FileRead(FileReadParams {
                path: PathBuf::from("/work/AGENTS.md"),
                max_bytes: Some(65536),
            }),
            "fs/read",
            json!({"path": "/work/AGENTS.md", "maxBytes": 65536}),
        ),
        (
            ExecServerRequest::FileStat(FileStatParams {
                path: PathBuf::from("/work/.git"),
            }),
            "fs/stat",
            json!({"path": "/work/.git"}),
        ),
        (
            ExecServerRequest::FileList(FileListParams {
                path: PathBuf::from("/work/.agents/skills"),
            }),
            "fs/list",
            json!({"path": "/work/.agents/skills"}),
        ),
    ]
}

#[test]
fn every_request_variant_has_its_method_and_params_shape() -> anyhow::Result<()> {
    let cases = request_cases();
    let mut seen: Vec<&str> = Vec::new();
    for (request, method, params) in cases {
        assert_eq!(request.method(), method);
        let (got_method, got_params) = request.clone().into_method_and_params()?;
        assert_eq!(got_method, method);
        assert_eq!(got_params, params);
        let back = ExecServerRequest::from_method_and_params(method, Some(params))?;
        assert_eq!(back, request);
        if !seen.contains(&method) {
            seen.push(method);
        }
    }
    assert_eq!(
        seen,
        ExecServerRequest::METHODS.to_vec(),
        "a method lacks a test case"
    );
    Ok(())
}

#[test]
fn marker_types_name_the_same_methods() {
    use exec_server_request as m;
    assert_eq!(<m::Initialize as RpcRequest>::METHOD, "initialize");
    assert_eq!(<m::Exec as RpcRequest>::METHOD, "command/exec");
    assert_eq!(<m::Write as RpcRequest>::METHOD, "command/exec/write");
    assert_eq!(
        <m::Terminate as RpcRequest>::METHOD,
        "command/exec/terminate"
    );
    assert_eq!(<m::Resize as RpcRequest>::METHOD, "command/exec/resize");
    assert_eq!(
        <m::CloseStdin as RpcRequest>::METHOD,
        "command/exec/closeStdin"
    );
    assert_eq!(<m::Wait as RpcRequest>::METHOD, "command/exec/wait");
    assert_eq!(<m::Snapshot as RpcRequest>::METHOD, "command/exec/snapshot");
    assert_eq!(
        <exec_server_notification::OutputDelta as RpcNotification>::METHOD,
        "command/exec/outputDelta"
    );
    assert_eq!(
        <exec_server_notification::Exited as RpcNotification>::METHOD,
        "command/exec/exited"
    );
    assert_eq!(
        <exec_server_client_notification::Initialized as RpcNotification>::METHOD,
        "initialized"
    );
}

#[test]
fn every_notification_variant_has_its_method_and_params_shape() -> anyhow::Result<()> {
    let cases = vec![
        (
            ExecServerNotification::OutputDelta(OutputDeltaNotification {
                session_id: sid(),
                stream: ExecOutputStream::Stdout,
                chunk: Base64Bytes::from(b"ready\r\n".as_slice()),
            }),
            "command/exec/outputDelta",
            json!({"sessionId": "session-1", "stream": "stdout", "chunk": "cmVhZHkNCg=="}),
        ),
        (
            ExecServerNotification::Exited(ExitedNotification {
                session_id: sid(),
                exit_code: 0,
            }),
            "command/exec/exited",
            json!({"sessionId": "session-1", "exitCode": 0}),
        ),
    ];
    for (notification, method, params) in &cases {
        let (got_method, got_params) = notification.clone().into_method_and_params()?;
        assert_eq!(got_method, *method);
        assert_eq!(&got_params, params);
        let back = ExecServerNotification::from_method_and_params(method, Some(params.clone()))?;
        assert_eq!(&back, notification);
    }
    let methods: Vec<&str> = cases.iter().map(|(_, m, _)| *m).collect();
    assert_eq!(methods, ExecServerNotification::METHODS.to_vec());

    // `initialized` is accepted with params omitted, as the spec says they are ignored.
    let initialized = ExecServerClientNotification::from_method_and_params("initialized", None)?;
    assert_eq!(
        initialized,
        ExecServerClientNotification::Initialized(InitializedParams {})
    );
    Ok(())
}

#[test]
fn result_shapes() -> anyhow::Result<()> {
    let cases: Vec<(Value, Value)> = vec![
        (
            serde_json::to_value(InitializeResponse {
                protocol_version: EXEC_SERVER_PROTOCOL_VERSION.into(),
                extensions: vec!["command/exec/wait".into()],
            })?,
            json!({"protocolVersion": "exec-server.v0", "extensions": ["command/exec/wait"]}),
        ),
        (
            serde_json::to_value(ExecResponse { session_id: sid() })?,
            json!({"sessionId": "session-1"}),
        ),
        (
            serde_json::to_value(WriteResponse { accepted: true })?,
            json!({"accepted": true}),
        ),
        (
            serde_json::to_value(TerminateResponse { running: false })?,
            json!({"running": false}),
        ),
        (serde_json::to_value(ResizeResponse {})?, json!({})),
        (serde_json::to_value(CloseStdinResponse {})?, json!({})),
        (
            serde_json::to_value(WaitResponse {
                exit_code: None,
                timed_out: true,
            })?,
            json!({"exitCode": null, "timedOut": true}),
        ),
        (
            serde_json::to_value(SnapshotResponse {
                stdout: Some(Base64Bytes::from(b"hi".as_slice())),
                stderr: Some(Base64Bytes::default()),
                terminal: None,
                truncated: true,
                exit_code: Some(3),
                running: false,
            })?,
            json!({"stdout": "aGk=", "stderr": "", "truncated": true, "exitCode": 3, "running": false}),
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
    Ok(())
}

/// The example session of the exec-server spec, line for line.
#[test]
fn golden_command_exec_exchange() -> anyhow::Result<()> {
    let request_line = r#"{"id":2,"method":"command/exec","params":{"argv":["bash","-lc","printf 'ready\\n'; read l; echo got:$l"],"cwd":"/tmp","env":{"PATH":"/usr/bin:/bin"},"tty":true,"arg0":null}}"#;
    let JsonRpcMessage::Request(request) = JsonRpcMessage::from_json(request_line)? else {
        anyhow::bail!("not a request");
    };
    let typed = ExecServerRequest::from_method_and_params(&request.method, request.params)?;
    let ExecServerRequest::Exec(params) = &typed else {
        anyhow::bail!("not command/exec: {typed:?}");
    };
    assert_eq!(params.argv[2], "printf 'ready\\n'; read l; echo got:$l");
    assert!(params.tty);
    let (method, params) = typed.into_method_and_params()?;
    let rebuilt: JsonRpcMessage = JsonRpcRequest {
        id: RequestId::Integer(2),
        method: method.to_string(),
        params: Some(params),
        trace: None,
    }
    .into();
    // Params pass through a JSON map, so compare as values: member order is not significant.
    assert_eq!(
        serde_json::from_str::<Value>(&rebuilt.to_json(JsonRpcFraming::WithoutVersion)?)?,
        serde_json::from_str::<Value>(request_line)?
    );

    let response: JsonRpcMessage = JsonRpcResponse {
        id: RequestId::Integer(2),
        result: serde_json::to_value(ExecResponse { session_id: sid() })?,
    }
    .into();
    assert_eq!(
        response.to_json(JsonRpcFraming::WithoutVersion)?,
        r#"{"id":2,"result":{"sessionId":"session-1"}}"#
    );

    let delta_line = r#"{"method":"command/exec/outputDelta","params":{"sessionId":"session-1","stream":"stdout","chunk":"cmVhZHkNCg=="}}"#;
    let JsonRpcMessage::Notification(delta) = JsonRpcMessage::from_json(delta_line)? else {
        anyhow::bail!("not a notification");
    };
    let ExecServerNotification::OutputDelta(delta) =
        ExecServerNotification::from_method_and_params(&delta.method, delta.params)?
    else {
        anyhow::bail!("not an output delta");
    };
    assert_eq!(delta.chunk.as_bytes(), b"ready\r\n");
    Ok(())
}

#[test]
fn an_initialize_result_without_extensions_still_reads() -> anyhow::Result<()> {
    // Servers that predate the list answer with the version alone.
    let old: InitializeResponse =
        serde_json::from_value(json!({"protocolVersion": "exec-server.v0"}))?;
    assert!(old.extensions.is_empty());
    Ok(())
}
