//! Two peers of different protocol versions over real QUIC: the connection is made on
//! the version-probe ALPN name and both sides report both versions.

#![allow(clippy::unwrap_used)]

use gantry_net::tls::{
    fingerprint, generate_ca, join_client_config, master_server_config, Ca, MASTER_SERVER_NAME,
};
use gantry_net::transport::{accept_hello, expect_hello_reply, negotiated_alpn, write_frame};
use gantry_proto::{Hello, PeerRole, ALPN_VERSION_PROBE};

async fn mismatch(server_version: u32, client_version: u32) -> (String, String, Option<Vec<u8>>) {
    let ca = generate_ca("test").unwrap();
    let signer = Ca::load(&ca.cert_pem, &ca.key_pem).unwrap();
    let (cert, key) = signer.issue_master("head").unwrap();
    let server_cfg = master_server_config(&ca.cert_pem, &cert, &key, server_version).unwrap();
    let server = quinn::Endpoint::server(server_cfg, "127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = server.local_addr().unwrap();
    let server_task = tokio::spawn(async move {
        let conn = server.accept().await.unwrap().await.unwrap();
        let alpn = negotiated_alpn(&conn);
        let (mut send, mut recv) = conn.accept_bi().await.unwrap();
        let err = accept_hello(&mut recv, &mut send, server_version, "the master")
            .await
            .unwrap_err();
        send.finish().unwrap();
        conn.closed().await;
        (err.to_string(), alpn)
    });
    let client = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let cfg = join_client_config(fingerprint(&ca.cert_der), client_version).unwrap();
    let conn = client
        .connect_with(cfg, addr, MASTER_SERVER_NAME)
        .unwrap()
        .await
        .unwrap();
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    let mut hello = Hello::new(PeerRole::Execd, "test");
    hello.protocol_version = client_version;
    write_frame(&mut send, &hello).await.unwrap();
    let client_err = expect_hello_reply(&mut recv).await.unwrap_err().to_string();
    conn.close(0u32.into(), b"done");
    let (server_err, alpn) = server_task.await.unwrap();
    (server_err, client_err, alpn)
}

#[tokio::test]
async fn peers_of_different_versions_name_both_versions() {
    let (server_err, client_err, alpn) = mismatch(1, 2).await;
    let want = "protocol version mismatch: the master speaks Gantry protocol 1, the execd speaks Gantry protocol 2: upgrade the master to the release of the other";
    assert_eq!(server_err, want);
    assert_eq!(client_err, want);
    assert_eq!(alpn.as_deref(), Some(ALPN_VERSION_PROBE));
    // An execd left behind by an upgraded master is told to upgrade.
    let (server_err, client_err, _) = mismatch(3, 2).await;
    let want = "protocol version mismatch: the master speaks Gantry protocol 3, the execd speaks Gantry protocol 2: upgrade the execd to the release of the other";
    assert_eq!(server_err, want);
    assert_eq!(client_err, want);
}
