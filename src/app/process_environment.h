// Environment defaults for the libraries Nereid loads, set before any thread starts.
//
// Thread-safety: call SetLibraryEnvironmentDefaults once at start-up, before any thread starts
// (setenv races with getenv on other threads).
#pragma once

#include <string_view>

namespace nereid {

// ONNX Runtime 1.30's Linux build starts a telemetry system with its first Ort::Env: a thread,
// a SQLite file under $HOME/.cache/Microsoft, and HTTPS uploads of session events (model names
// and metadata among them) to Microsoft. Triton's ONNX Runtime backend sends nothing, and a
// server must not write to its user's home or call out, so Nereid turns it off (ADR 0021).
inline constexpr std::string_view kOrtTelemetryVariable = "ORT_DISABLE_TELEMETRY";

// Sets each default that the environment does not already set: a user who exported a value
// (ORT_DISABLE_TELEMETRY=0 opts back in) keeps it. Python stubs inherit the result.
void SetLibraryEnvironmentDefaults();

}  // namespace nereid
