//! Hostile frames built from valid ones.
//!
//! [`FrameFuzzer`] turns a handful of valid seed messages into an endless, reproducible stream
//! of hostile frames: members replaced by values of the wrong type or deleted, unknown methods,
//! ids of every JSON type (and duplicates), JSON that is not a message, responses nobody asked
//! for, deep nesting, truncated and bit-flipped bytes, invalid UTF-8. The tests drive each
//! server with it and check after every batch that a valid request is still answered.
//!
//! `KEEL_FUZZ_FRAMES` sets how many frames a run sends (default [`DEFAULT_FUZZ_FRAMES`]);
//! `KEEL_FUZZ_SEED` replays a run (the seed is printed at the start of each).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};

/// Frames per server in a default run (what CI runs).
pub const DEFAULT_FUZZ_FRAMES: usize = 100_000;

/// Frames a run sends: `KEEL_FUZZ_FRAMES`, or [`DEFAULT_FUZZ_FRAMES`].
pub fn fuzz_frames_from_env() -> usize {
    std::env::var("KEEL_FUZZ_FRAMES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(DEFAULT_FUZZ_FRAMES)
}

/// The run's seed: `KEEL_FUZZ_SEED`, or one from the clock (printed, so a failure can be
/// replayed).
pub fn fuzz_seed_from_env() -> u64 {
    let seed = std::env::var("KEEL_FUZZ_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|elapsed| elapsed.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("fuzz seed: KEEL_FUZZ_SEED={seed}");
    seed
}

/// One line of `[` nested `depth` deep (then closed): a parser that recurses blows its stack.
pub fn deeply_nested_line(depth: usize) -> Vec<u8> {
    let mut line = Vec::with_capacity(depth * 2 + 40);
    line.extend_from_slice(br#"{"id":1,"method":"x","params":"#);
    line.extend(std::iter::repeat_n(b'[', depth));
    line.extend(std::iter::repeat_n(b']', depth));
    line.push(b'}');
    line
}

/// A reproducible stream of hostile frames derived from valid seed messages.
#[derive(Debug)]
pub struct FrameFuzzer {
    rng: StdRng,
    seeds: Vec<Value>,
}

impl FrameFuzzer {
    /// A fuzzer mutating `seeds` (valid requests and notifications of the server under test;
    /// keep out methods with side effects beyond the test's temporary home).
    pub fn new(seed: u64, seeds: Vec<Value>) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            seeds,
        }
    }

    /// The next frame: one line's bytes, without the newline (it holds none).
    pub fn next_frame(&mut self) -> Vec<u8> {
        let mut line = match self.rng.random_range(0..100) {
            0..25 => self.with_member_replaced(),
            25..35 => self.with_member_removed(),
            35..45 => self.with_unknown_method(),
            45..55 => self.seed_with_odd_id(),
            55..62 => self.not_a_message(),
            62..68 => self.unsolicited_response(),
            68..72 => self.nested_params(),
            72..88 => self.bytes_mutated(),
            _ => self.invalid_utf8(),
        };
        // One frame is one line: a newline made by a mutation would split it in two.
        for byte in &mut line {
            if *byte == b'\n' {
                *byte = b' ';
            }
        }
        line
    }

    fn pick_seed(&mut self) -> Value {
        if self.seeds.is_empty() {
            return json!({"id": 1, "method": "ping"});
        }
        let index = self.rng.random_range(0..self.seeds.len());
        self.seeds[index].clone()
    }

    fn random_id(&mut self) -> Value {
        match self.rng.random_range(0..8) {
            // Few distinct integers, so duplicates are common.
            0..3 => json!(self.rng.random_range(0..8)),
            3 => json!(format!("id-{}", self.rng.random_range(0..4))),
            4 => Value::Null,
            5 => json!(1.5),
            6 => json!({"nested": true}),
            _ => json!(i64::MAX),
        }
    }

    fn random_value(&mut self, depth: usize) -> Value {
        match self.rng.random_range(0..if depth > 3 { 6 } else { 8 }) {
            0 => Value::Null,
            1 => json!(self.rng.random::<bool>()),
            2 => json!(self.rng.random::<i64>()),
            3 => json!(self.rng.random::<f64>()),
            4 => json!(self.random_string()),
            5 => json!(""),
            6 => Value::Array(
                (0..self.rng.random_range(0..4))
                    .map(|_| self.random_value(depth + 1))
                    .collect(),
            ),
            _ => {
                let mut map = Map::new();
                for _ in 0..self.rng.random_range(0..4) {
                    let key = self.random_string();
                    let value = self.random_value(depth + 1);
                    map.insert(key, value);
                }
                Value::Object(map)
            }
        }
    }

    fn random_string(&mut self) -> String {
        const ALPHABET: &[char] = &[
            'a', 'b', 'z', '/', '.', ' ', '-', '_', '0', '9', 'é', '\u{0}', '\u{7f}', '"', '\\',
            '\u{2028}', '🦀',
        ];
        let length = self.rng.random_range(0..24);
        (0..length)
            .map(|_| ALPHABET[self.rng.random_range(0..ALPHABET.len())])
            .collect()
    }

    /// Every object member of `value`, as JSON pointers.
    fn member_pointers(value: &Value, at: String, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, member) in map {
                    let pointer = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                    out.push(pointer.clone());
                    Self::member_pointers(member, pointer, out);
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    Self::member_pointers(item, format!("{at}/{index}"), out);
                }
            }
            _ => {}
        }
    }

    fn random_pointer(&mut self, value: &Value) -> Option<String> {
        let mut pointers = Vec::new();
        Self::member_pointers(value, String::new(), &mut pointers);
        if pointers.is_empty() {
            return None;
        }
        let index = self.rng.random_range(0..pointers.len());
        Some(pointers.swap_remove(index))
    }

    fn with_member_replaced(&mut self) -> Vec<u8> {
        let mut message = self.pick_seed();
        if let Some(pointer) = self.random_pointer(&message) {
            let replacement = self.random_value(0);
            if let Some(slot) = message.pointer_mut(&pointer) {
                *slot = replacement;
            }
        }
        to_line(&message)
    }

    fn with_member_removed(&mut self) -> Vec<u8> {
        let mut message = self.pick_seed();
        if let Some(pointer) = self.random_pointer(&message)
            && let Some((parent, key)) = pointer.rsplit_once('/')
            && let Some(Value::Object(map)) = message.pointer_mut(parent)
        {
            map.remove(&key.replace("~1", "/").replace("~0", "~"));
        }
        to_line(&message)
    }

    fn with_unknown_method(&mut self) -> Vec<u8> {
        let mut message = self.pick_seed();
        let method = format!("fuzz/{}", self.random_string());
        message["method"] = json!(method);
        to_line(&message)
    }

    fn seed_with_odd_id(&mut self) -> Vec<u8> {
        let mut message = self.pick_seed();
        if self.rng.random_range(0..4) == 0 {
            if let Value::Object(map) = &mut message {
                map.remove("id");
            }
        } else {
            message["id"] = self.random_id();
        }
        to_line(&message)
    }

    fn not_a_message(&mut self) -> Vec<u8> {
        let value = match self.rng.random_range(0..7) {
            0 => json!([]),
            1 => Value::Null,
            2 => json!(5),
            3 => json!("a string"),
            4 => json!({}),
            5 => json!([{"id": 1, "method": "ping"}]),
            _ => json!({"jsonrpc": "2.0"}),
        };
        to_line(&value)
    }

    fn unsolicited_response(&mut self) -> Vec<u8> {
        let id = self.random_id();
        let message = if self.rng.random::<bool>() {
            json!({"id": id, "result": self.random_value(0)})
        } else {
            json!({"id": id, "error": {"code": -32000, "message": self.random_string()}})
        };
        to_line(&message)
    }

    fn nested_params(&mut self) -> Vec<u8> {
        let depth = self.rng.random_range(100..2_000);
        deeply_nested_line(depth)
    }

    fn bytes_mutated(&mut self) -> Vec<u8> {
        let mut line = to_line(&self.pick_seed());
        for _ in 0..self.rng.random_range(1..4) {
            if line.is_empty() {
                break;
            }
            let at = self.rng.random_range(0..line.len());
            match self.rng.random_range(0..4) {
                0 => line[at] ^= 1 << self.rng.random_range(0..8),
                1 => line.truncate(at),
                2 => line.insert(at, self.rng.random()),
                _ => {
                    line.remove(at);
                }
            }
        }
        line
    }

    fn invalid_utf8(&mut self) -> Vec<u8> {
        let mut line = to_line(&self.pick_seed());
        let at = self.rng.random_range(0..=line.len());
        let bad: &[u8] = match self.rng.random_range(0..4) {
            0 => &[0xff],
            1 => &[0xc3],
            2 => &[0xed, 0xa0, 0x80],
            _ => &[0xf4, 0x90, 0x80, 0x80],
        };
        line.splice(at..at, bad.iter().copied());
        line
    }
}

fn to_line(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_frames_and_no_frame_spans_lines() {
        let seeds = vec![json!({"id": 1, "method": "ping", "params": {"a": [1, {"b": "c"}]}})];
        let mut first = FrameFuzzer::new(7, seeds.clone());
        let mut second = FrameFuzzer::new(7, seeds);
        for _ in 0..2_000 {
            let frame = first.next_frame();
            assert_eq!(frame, second.next_frame());
            assert!(!frame.contains(&b'\n'));
        }
    }
}
