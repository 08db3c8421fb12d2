// Placeholder: written by the Relay core work in progress.
