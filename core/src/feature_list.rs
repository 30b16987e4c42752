//! Every switch Keel reads, for what lists them (`keel features`, the app-server's
//! `experimentalFeature/list`): the engine's own ([`crate::config::KEEL_FEATURES`]) and the
//! switches built-ins declare in their table row.

use crate::config::{FeatureInfo, KEEL_FEATURES};

/// The engine's switches, then the built-ins' own, in table order.
pub fn features() -> Vec<FeatureInfo> {
    KEEL_FEATURES
        .iter()
        .copied()
        .chain(
            crate::tools::tool_switches()
                .map(|switch| FeatureInfo::of_switch(switch.key, switch.about, switch.default)),
        )
        .collect()
}
