//! planner (to be written)
