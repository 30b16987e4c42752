//! The `fs.v1` extension over the wire: `fs/read` answers a file's bytes, or says it is
//! missing, too large or unreadable; `fs/stat` says what a path is; `fs/list` lists a
//! directory (links followed); a relative path is invalid params. `initialize` announces the extension.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::harness::{Server, Transport, both_transports};

async fn files_are_read_and_examined_on_the_server(transport: Transport) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let bytes = b"\x00binary\xffcontents";
    std::fs::write(dir.path().join("data.bin"), bytes)?;
    let mut server = Server::start(transport, &[]).await?;
    let mut peer = server.raw().await?;
    let hello = peer
        .request(0, "initialize", json!({"clientName": "raw"}))
        .await?;
    assert!(
        hello["result"]["extensions"]
            .as_array()
            .is_some_and(|list| list.iter().any(|e| e == "fs.v1")),
        "{hello}"
    );
    peer.send(json!({"method": "initialized", "params": {}}))
        .await?;
    let path = |name: &str| dir.path().join(name).display().to_string();

    let read = peer
        .request(1, "fs/read", json!({"path": path("data.bin")}))
        .await?;
    assert_eq!(read["result"]["status"], "read", "{read}");
    let data: keel_protocol::Base64Bytes =
        serde_json::from_value(read["result"]["dataBase64"].clone())?;
    assert_eq!(data.0, bytes.to_vec());

    let limited = peer
        .request(
            2,
            "fs/read",
            json!({"path": path("data.bin"), "maxBytes": 4}),
        )
        .await?;
    assert_eq!(
        limited["result"],
        json!({"status": "tooLarge", "size": bytes.len()})
    );

    let missing = peer
        .request(3, "fs/read", json!({"path": path("nope")}))
        .await?;
    assert_eq!(missing["result"], json!({"status": "missing"}));

    let directory = peer
        .request(4, "fs/read", json!({"path": path("")}))
        .await?;
    assert_eq!(directory["result"]["status"], "unreadable", "{directory}");

    let stat = peer
        .request(5, "fs/stat", json!({"path": path("data.bin")}))
        .await?;
    assert_eq!(
        stat["result"],
        json!({"status": "found", "isFile": true, "isDirectory": false, "size": bytes.len()})
    );
    let gone = peer
        .request(6, "fs/stat", json!({"path": path("nope")}))
        .await?;
    assert_eq!(gone["result"], json!({"status": "missing"}));

    std::fs::create_dir(dir.path().join("sub"))?;
    std::os::unix::fs::symlink(dir.path().join("sub"), dir.path().join("link"))?;
    let listed = peer
        .request(8, "fs/list", json!({"path": path("")}))
        .await?;
    assert_eq!(
        listed["result"],
        json!({"status": "listed", "entries": [
            {"fileName": "data.bin", "isDirectory": false, "isFile": true},
            {"fileName": "link", "isDirectory": true, "isFile": false},
            {"fileName": "sub", "isDirectory": true, "isFile": false},
        ]})
    );
    let not_a_dir = peer
        .request(9, "fs/list", json!({"path": path("data.bin")}))
        .await?;
    assert_eq!(not_a_dir["result"]["status"], "unreadable", "{not_a_dir}");
    let no_dir = peer
        .request(10, "fs/list", json!({"path": path("nope")}))
        .await?;
    assert_eq!(no_dir["result"], json!({"status": "missing"}));

    // A FIFO nobody writes to is refused at once, not waited on.
    nix::unistd::mkfifo(&dir.path().join("pipe"), nix::sys::stat::Mode::S_IRWXU)?;
    let pipe = peer
        .request(11, "fs/read", json!({"path": path("pipe")}))
        .await?;
    assert_eq!(
        pipe["result"],
        json!({"status": "unreadable", "message": "it is a FIFO, not a regular file"})
    );

    for (id, method) in [(7, "fs/read"), (12, "fs/stat"), (13, "fs/list")] {
        let relative = peer
            .request(id, method, json!({"path": "data.bin"}))
            .await?;
        assert_eq!(relative["error"]["code"], -32602, "{relative}");
        let message = relative["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("must be absolute"), "{method}: {message}");
    }
    Ok(())
}

both_transports!(files_are_read_and_examined_on_the_server);
