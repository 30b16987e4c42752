//! Properties of SSE framing: how the bytes are cut into chunks never changes the frames.

use std::time::Duration;

use futures::StreamExt;
use proptest::prelude::*;

use super::frames;

/// An event as the server writes it: a name and data lines.
fn events() -> impl Strategy<Value = Vec<(String, Vec<String>)>> {
    prop::collection::vec(
        (
            "[a-z.]{1,24}",
            prop::collection::vec("[ -~é🦀]{0,40}", 1..3),
        ),
        1..12,
    )
}

fn render(events: &[(String, Vec<String>)]) -> Vec<u8> {
    let mut text = String::new();
    for (name, data) in events {
        text.push_str(&format!("event: {name}\n"));
        for line in data {
            text.push_str(&format!("data: {line}\n"));
        }
        text.push('\n');
    }
    text.into_bytes()
}

fn parse_in_chunks(bytes: Vec<u8>, cuts: Vec<usize>) -> Vec<(String, String)> {
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut cuts: Vec<usize> = cuts
        .into_iter()
        .map(|cut| cut % (bytes.len() + 1))
        .collect();
    cuts.sort_unstable();
    for cut in cuts {
        chunks.push(Ok::<_, std::io::Error>(
            bytes[start..cut.max(start)].to_vec(),
        ));
        start = cut.max(start);
    }
    chunks.push(Ok(bytes[start..].to_vec()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        frames(futures::stream::iter(chunks), Duration::from_secs(5))
            .map(|frame| {
                let frame = frame.expect("a frame");
                (frame.event, frame.data)
            })
            .collect()
            .await
    })
}

proptest! {
    #[test]
    fn frames_do_not_depend_on_chunk_boundaries(
        events in events(),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let bytes = render(&events);
        let expected: Vec<(String, String)> = events
            .iter()
            .map(|(name, data)| (name.clone(), data.join("\n")))
            .collect();
        prop_assert_eq!(parse_in_chunks(bytes.clone(), Vec::new()), expected.clone());
        prop_assert_eq!(parse_in_chunks(bytes, cuts), expected);
    }
}
