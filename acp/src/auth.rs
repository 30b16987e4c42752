//! Signing in: Keel reads the provider's API key from the environment variable the provider
//! names, or the key `keel login --with-api-key` stored. The editor is offered that one method
//! (`api-key`) when the provider takes a key; a provider without one (a local model) offers
//! none. `authenticate` checks that a key is there; `logout` forgets the stored key (the
//! environment's stays the editor's to unset).

use keel_protocol::JsonRpcErrorObject;
use keel_protocol::acp::{AuthMethod, AuthenticateRequest};
use keel_protocol::app_server::{NoParams, client_request};

use crate::agent::{Agent, engine_error};

/// The one sign-in method.
const API_KEY_METHOD: &str = "api-key";

/// ACP's code for "authentication required".
const AUTH_REQUIRED: i64 = -32000;

impl Agent {
    /// The sign-in methods the configured provider takes.
    pub(crate) fn auth_methods(&self) -> Vec<AuthMethod> {
        let Some(env_key) = self.provider_env_key() else {
            return Vec::new();
        };
        vec![AuthMethod {
            id: API_KEY_METHOD.to_string(),
            name: "API key".to_string(),
            description: Some(format!(
                "The provider's key from `{env_key}`, or the key `keel login --with-api-key` \
                 stored"
            )),
        }]
    }

    /// `authenticate`: whether the provider's key is there.
    pub(crate) fn authenticate(
        &self,
        params: &AuthenticateRequest,
    ) -> Result<(), JsonRpcErrorObject> {
        let Some(env_key) = self.provider_env_key() else {
            return Err(JsonRpcErrorObject::new(
                keel_protocol::INVALID_PARAMS,
                format!(
                    "unknown authentication method `{}`: the configured provider takes no key",
                    keel_protocol::echo_bounded(&params.method_id)
                ),
            ));
        };
        if params.method_id != API_KEY_METHOD {
            return Err(JsonRpcErrorObject::new(
                keel_protocol::INVALID_PARAMS,
                format!(
                    "unknown authentication method `{}`: Keel offers `{API_KEY_METHOD}`",
                    keel_protocol::echo_bounded(&params.method_id)
                ),
            ));
        }
        let from_environment = std::env::var(&env_key).is_ok_and(|key| !key.trim().is_empty());
        let stored = matches!(
            keel_core::config::read_stored_api_key(&self.server.keel_home),
            Ok(Some(_))
        );
        if from_environment || stored {
            Ok(())
        } else {
            Err(JsonRpcErrorObject::new(
                AUTH_REQUIRED,
                format!(
                    "no API key: set `{env_key}` in the editor's environment for `keel acp`, or \
                     run `keel login --with-api-key`"
                ),
            ))
        }
    }

    /// `logout`: the stored key is removed.
    pub(crate) async fn logout(&self) -> Result<(), JsonRpcErrorObject> {
        self.client
            .request::<client_request::AccountLogout>(NoParams {})
            .await
            .map_err(engine_error)?;
        Ok(())
    }

    /// The environment variable the configured provider reads its key from, when it takes one.
    fn provider_env_key(&self) -> Option<String> {
        match self.load_config() {
            Ok(config) => config.model_provider.env_key,
            Err(err) => {
                tracing::warn!("reading the configuration for sign-in: {err}");
                None
            }
        }
    }
}
