//! Calibrated token rates: one bytes-per-token estimate per model, learnt from the provider's
//! usage reports (see `sayri_core::domain::tokens`).

use crate::Store;
use rusqlite::{OptionalExtension, params};
use sayri_core::ports::StoreError;

impl Store {
    pub(crate) fn token_rate_impl(&self, model: &str) -> Result<Option<f64>, StoreError> {
        self.lock()?
            .query_row(
                "SELECT bytes_per_token FROM token_rates WHERE model = ?1",
                [model],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.fail(e))
    }

    pub(crate) fn set_token_rate_impl(
        &self,
        model: &str,
        rate: f64,
        now: f64,
    ) -> Result<(), StoreError> {
        self.lock()?
            .execute(
                "INSERT INTO token_rates (model, bytes_per_token, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(model) DO UPDATE SET bytes_per_token = excluded.bytes_per_token,
                                                  updated_at = excluded.updated_at",
                params![model, rate, now],
            )
            .map(|_| ())
            .map_err(|e| self.fail(e))
    }
}
