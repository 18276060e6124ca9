//! catalog (to be written)
