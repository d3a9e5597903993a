//! Shared by the integration tests: a model made of loose named parameters.

use lingo_tensor::{Module, Param};

/// Named parameters in a fixed order, as the simplest possible [`Module`].
pub struct Params(pub Vec<Param>);

impl Module for Params {
    fn params(&self) -> Vec<&Param> {
        self.0.iter().collect()
    }
    fn params_mut(&mut self) -> Vec<&mut Param> {
        self.0.iter_mut().collect()
    }
}
