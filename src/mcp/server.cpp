// SPDX-License-Identifier: Apache-2.0
#include "mcp/server.hpp"

#include <exception>

#include "mcp/resources.hpp"

namespace gpuwhy::mcp {
namespace {

// A JSON-RPC error answer, thrown by a method handler.
struct RpcError {
  int code;
  std::string message;
};

const json& object_params(const json& params) {
  if (!params.is_object()) throw RpcError{kInvalidParams, "params must be an object"};
  return params;
}

std::string string_param(const json& params, const char* name) {
  auto it = params.find(name);
  if (it == params.end() || !it->is_string())
    throw RpcError{kInvalidParams, std::string("params.") + name + " must be a string"};
  return it->get<std::string>();
}

// Output schemas and structured content came with 2025-06-18; earlier revisions have neither.
bool has_structured_output(const std::string& protocol_version) {
  return protocol_version >= "2025-06-18";
}

}  // namespace

// The text block always (clients of earlier revisions read only it); for a tool that declares an
// output schema, the same result as structuredContent, which clients validate against it.
json Server::tool_result(const Tool& tool, const ToolResult& r) const {
  json out = {{"content", json::array({{{"type", "text"}, {"text", r.text}}})},
              {"isError", r.is_error}};
  if (!r.is_error && !tool.output_schema.is_null() && has_structured_output(protocol_version_))
    out["structuredContent"] = json(r.value);
  return out;
}

json Server::initialize(const json& params) {
  object_params(params);
  const auto v = params.find("protocolVersion");
  const std::string asked = v != params.end() && v->is_string() ? v->get<std::string>() : "";
  protocol_version_ = kProtocolVersion;
  for (const char* v : kProtocolVersions)
    if (asked == v) protocol_version_ = v;
  return {{"protocolVersion", protocol_version_},
          {"capabilities",
           {{"tools", {{"listChanged", false}}},
            {"resources", {{"listChanged", false}, {"subscribe", false}}}}},
          {"serverInfo", {{"name", "gpuwhy"}, {"title", "gpuwhy"}, {"version", GPUWHY_VERSION}}},
          {"instructions",
           "gpuwhy analyses one GPU trace file, read-only: why GPU work was slow. Call explain "
           "first (ranked causal chains with evidence and fixes); chain_evidence for one chain; "
           "processes, threads and top_operations for who and what; query for read-only SQL "
           "(read the resource gpuwhy://schema for the tables, gpuwhy://views for the views)."}};
}

json Server::call_tool(const json& params) {
  object_params(params);
  const std::string name = string_param(params, "name");
  const Tool* tool = find_tool(name);
  if (!tool) {
    std::string names;
    for (const Tool& t : tools()) names += std::string(names.empty() ? "" : ", ") + t.name;
    throw RpcError{kInvalidParams, "unknown tool '" + name + "'; the tools are " + names};
  }
  json args = json::object();
  if (auto it = params.find("arguments"); it != params.end() && !it->is_null()) {
    if (!it->is_object()) throw RpcError{kInvalidParams, "params.arguments must be an object"};
    args = *it;
  }
  try {
    return tool_result(*tool, tool->handler(options_, args));
  } catch (const InvalidArguments& e) {
    const std::string line = std::string(tool->name) + ": " + e.what();
    // From 2025-11-25 on (SEP-1303) arguments that do not fit the schema are a tool execution
    // error the model reads and corrects; before, the JSON-RPC error "invalid params".
    if (protocol_version_ >= "2025-11-25") return tool_result(*tool, tool_error(line));
    throw RpcError{kInvalidParams, line};
  } catch (const std::exception& e) {
    // Not expected (the handlers return their failures): still one line, and the server lives.
    return tool_result(*tool, tool_error(std::string(tool->name) + ": internal error: " + e.what() +
                                         "; please report it"));
  }
}

json Server::read_resource_method(const json& params) {
  object_params(params);
  const std::string uri = string_param(params, "uri");
  auto contents = read_resource(uri);
  if (!contents)
    throw RpcError{
        kResourceNotFound,
        "no resource '" + uri + "'; the resources are gpuwhy://schema and gpuwhy://views"};
  return {{"contents", std::move(*contents)}};
}

json Server::dispatch(const std::string& method, const json& params) {
  if (method == "initialize") return initialize(params);
  if (method == "ping") return json::object();
  if (method == "tools/list") {
    json list = json::array();
    for (const Tool& t : tools()) {
      json entry = {{"name", t.name},
                    {"title", t.title},
                    {"description", t.description},
                    {"inputSchema", t.input_schema},
                    {"annotations",
                     {{"title", t.title},
                      {"readOnlyHint", true},
                      {"destructiveHint", false},
                      {"idempotentHint", true},
                      {"openWorldHint", false}}}};
      if (!t.output_schema.is_null() && has_structured_output(protocol_version_))
        entry["outputSchema"] = t.output_schema;
      list.push_back(std::move(entry));
    }
    return {{"tools", std::move(list)}};
  }
  if (method == "tools/call") return call_tool(params);
  if (method == "resources/list") return {{"resources", resource_list()}};
  if (method == "resources/templates/list") return {{"resourceTemplates", json::array()}};
  if (method == "resources/read") return read_resource_method(params);
  throw RpcError{kMethodNotFound, "method not found: " + method};
}

std::optional<json> Server::handle(const json& message) {
  if (!message.is_object())
    return make_error(nullptr, kInvalidRequest,
                      message.is_array() ? "batches are not supported: send one message per line"
                                         : "a message must be a JSON object");
  const auto id_it = message.find("id");
  const bool is_request = id_it != message.end();
  const json id = is_request ? *id_it : json(nullptr);
  const auto method_it = message.find("method");
  if (method_it == message.end()) {
    // A response to a request of ours: this server sends none, so there is nothing to match.
    if (is_request && (message.contains("result") || message.contains("error")))
      return std::nullopt;
    return make_error(id, kInvalidRequest, "a request needs a \"method\"");
  }
  const auto version = message.find("jsonrpc");
  if (version == message.end() || *version != "2.0" || !method_it->is_string())
    return is_request ? std::optional(make_error(id, kInvalidRequest,
                                                 "not a JSON-RPC 2.0 request (\"jsonrpc\": "
                                                 "\"2.0\" and a string \"method\" are needed)"))
                      : std::nullopt;
  if (is_request && !id.is_string() && !id.is_number_integer())
    return make_error(nullptr, kInvalidRequest, "a request id must be a string or an integer");
  // Notifications (initialized, cancelled, progress...) need no answer, and get none.
  if (!is_request) return std::nullopt;
  const json params = message.contains("params") ? message["params"] : json::object();
  try {
    return make_response(id, dispatch(method_it->get<std::string>(), params));
  } catch (const RpcError& e) {
    return make_error(id, e.code, e.message);
  } catch (const std::exception& e) {
    return make_error(id, kInternalError, std::string("internal error: ") + e.what());
  }
}

std::optional<std::string> Server::handle_line(const std::string& line) {
  if (nesting_depth(line) > kMaxNesting)
    return encode(
        make_error(nullptr, kInvalidRequest,
                   "message nested deeper than " + std::to_string(kMaxNesting) + " levels"));
  json message;
  try {
    message = json::parse(line);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    return encode(make_error(nullptr, kParseError, std::string("parse error: ") + e.what()));
  }
  try {
    auto answer = handle(message);
    if (!answer) return std::nullopt;
    return encode(*answer);
  } catch (const std::exception& e) {
    // handle() answers its own failures; this is the last guard that keeps the server serving.
    return encode(make_error(nullptr, kInternalError, std::string("internal error: ") + e.what()));
  }
}

int Server::serve(std::FILE* in, std::FILE* out) {
  LineReader reader(in, kMaxMessageBytes);
  std::string line;
  for (;;) {
    std::optional<std::string> answer;
    switch (reader.next(line)) {
      case LineReader::Status::End:
        return 0;
      case LineReader::Status::TooLong:
        answer = encode(
            make_error(nullptr, kInvalidRequest,
                       "message longer than " + std::to_string(kMaxMessageBytes >> 20) + " MiB"));
        break;
      case LineReader::Status::Line:
        if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank line
        answer = handle_line(line);
        break;
    }
    if (!answer) continue;
    answer->push_back('\n');
    if (std::fwrite(answer->data(), 1, answer->size(), out) != answer->size() ||
        std::fflush(out) != 0)
      return 1;
  }
}

}  // namespace gpuwhy::mcp
