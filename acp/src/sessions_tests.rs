use keel_protocol::acp::SessionUpdate;

use super::Sessions;

fn usage(used: u64) -> SessionUpdate {
    SessionUpdate::UsageUpdate { used, size: 1000 }
}

#[test]
fn updates_wait_while_a_session_opens_and_then_pass_straight_through() {
    let sessions = Sessions::default();
    assert!(sessions.hold("s", "/w".into()), "new here");
    assert_eq!(sessions.hold_while_opening("s", usage(1)), None);
    assert_eq!(sessions.hold_while_opening("s", usage(2)), None);
    // Released in order, in batches, until nothing is left.
    assert_eq!(sessions.release_held("s"), vec![usage(1), usage(2)]);
    assert_eq!(sessions.hold_while_opening("s", usage(3)), None);
    assert_eq!(sessions.release_held("s"), vec![usage(3)]);
    assert_eq!(sessions.release_held("s"), Vec::new());
    // Open: sent at once.
    assert_eq!(sessions.hold_while_opening("s", usage(4)), Some(usage(4)));
}

#[test]
fn a_session_opened_again_keeps_what_it_holds() {
    let sessions = Sessions::default();
    assert!(sessions.hold("s", "/w".into()));
    assert_eq!(sessions.hold_while_opening("s", usage(1)), None);
    assert!(!sessions.hold("s", "/w".into()), "not new the second time");
    assert_eq!(sessions.release_held("s"), vec![usage(1)]);
    // Sessions never held, or unknown here, pass through.
    assert_eq!(
        sessions.hold_while_opening("other", usage(2)),
        Some(usage(2))
    );
    assert_eq!(sessions.release_held("other"), Vec::new());
}
