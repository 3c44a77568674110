#include "backend/kubernetes/kubernetes_backend.hpp"

#include "backend/kubernetes/kube_session.hpp"

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "backend/kubernetes/kube_session.hpp"
#include "backend/kubernetes/pod_outcome.hpp"
#include "backend/kubernetes/pod_watch.hpp"

namespace airlock::backend::kubernetes {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct KubernetesBackend::Made {
  std::string pod, secret, network_policy;
};

namespace {

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string random_suffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* digits = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string out;
  for (int i = 0; i < 6; ++i) out += digits[rng() % 36];
  return out;
}

std::string pod_name(const std::string& invocation_id) {
  std::string base = label_value(invocation_id).substr(0, 40);
  while (!base.empty() && !std::isalnum(static_cast<unsigned char>(base.back()))) base.pop_back();
  for (char& c : base)
    if (c == '.') c = '-';
  return "airlock-" + base + "-" + random_suffix();
}

Status read_into(const fs::path& file, const std::string& inside, std::vector<ProjectedFile>& files) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Error::make("kubernetes", "cannot read " + file.string());
  std::ostringstream content;
  content << in.rdbuf();
  files.push_back({inside, content.str()});
  return Status::success();
}

// A tool_code or runner mount: its file, or every regular file under its directory.
Status mount_files(const Mount& mount, std::vector<ProjectedFile>& files) {
  std::error_code ec;
  if (fs::is_regular_file(mount.host_path, ec)) return read_into(mount.host_path, mount.path_inside, files);
  if (!fs::is_directory(mount.host_path, ec))
    return Error::make("kubernetes", "the " + std::string(mount_kind_name(mount.kind)) + " mount " + mount.host_path + " is neither a file nor a directory");
  for (auto it = fs::recursive_directory_iterator(mount.host_path, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    std::string relative = fs::relative(it->path(), mount.host_path).string();
    if (auto status = read_into(it->path(), mount.path_inside + "/" + relative, files); !status) return status;
  }
  if (ec) return Error::make("kubernetes", "cannot list " + mount.host_path + ": " + ec.message());
  return Status::success();
}

// data mounts name host directories, which a pod elsewhere in the cluster cannot see.
Result<std::vector<ProjectedFile>> projected_files(const std::vector<Mount>& mounts) {
  std::vector<ProjectedFile> files;
  for (const auto& mount : mounts) {
    if (mount.kind == Mount::Kind::data)
      return Error::make("kubernetes", "the data mount " + mount.host_path + " → " + mount.path_inside +
                                           " cannot be given to a pod: host directories do not exist in the cluster (docs/kubernetes.md)");
    if (auto status = mount_files(mount, files); !status) return status.error();
  }
  return files;
}

std::uint64_t secret_bytes(const PodPlan& plan) {
  std::uint64_t total = plan.stdin_bytes.size();
  for (const auto& file : plan.files) total += file.content.size();
  for (const auto& credential : plan.credentials) total += credential.value.size();
  return total;
}

}  // namespace

KubernetesBackend::KubernetesBackend(KubeEndpoint endpoint, KubernetesOptions options)
    : client_(std::move(endpoint)), options_(std::move(options)), api_(client_, options_.namespace_name, options_.retry) {
  gc_ = std::make_unique<GarbageCollector>([this] { collect_garbage_now(); }, options_.gc_interval);
}

std::unique_ptr<SessionBackend> KubernetesBackend::make_session_backend() const {
  return std::make_unique<KubernetesSessionBackend>(client_.endpoint(), options_);
}

KubernetesBackend::~KubernetesBackend() {
  shutdown();
  gc_.reset();
}

void KubernetesBackend::shutdown() {
  stopping_ = true;
  std::lock_guard lock(mu_);
  for (auto& [pod, breaker] : running_) breaker->break_now();
}

bool KubernetesBackend::is_running(const std::string& pod) const {
  std::lock_guard lock(mu_);
  return running_.count(pod) > 0;
}

Status KubernetesBackend::abandon(const std::string& invocation_id) {
  auto deleted = delete_pods_of(api_, invocation_id);
  if (!deleted) return deleted.error();
  return {};
}

GcPass KubernetesBackend::collect_garbage_now() {
  return collect_garbage(api_, [this](const std::string& pod) { return is_running(pod); }, unix_now());
}

Result<PodPlan> KubernetesBackend::plan(const RunRequest& request, const RunContext& context) const {
  PodPlan plan;
  plan.image = request.placement.image.empty() ? options_.image : request.placement.image;
  if (plan.image.empty())
    return Error::make("kubernetes", "no image for " + context.tool_name + ": set tools[].kubernetes.image or tiers.<risk>.kubernetes.image");
  if (request.argv.empty()) return Error::make("kubernetes", "nothing to run (empty argv)");
  auto files = projected_files(request.mounts);
  if (!files) return files.error();
  auto cidrs = egress_cidrs(request.egress, options_.gateway != nullptr);
  if (!cidrs) return cidrs.error();
  plan.files = std::move(*files);
  plan.egress = std::move(*cidrs);
  plan.name = pod_name(context.invocation_id);
  plan.namespace_name = options_.namespace_name;
  plan.invocation_id = context.invocation_id;
  plan.tool_name = context.tool_name;
  plan.instance = options_.instance;
  auto lifetime = request.limits.wall_time + options_.pending_allowance;
  plan.expires_at = unix_now() + std::chrono::duration_cast<std::chrono::seconds>(lifetime).count() + 1;
  plan.runtime_class = options_.runtime_class;
  plan.argv = request.argv;
  plan.env = request.env;
  plan.credentials = request.credentials;
  plan.stdin_bytes = request.stdin_bytes;
  plan.limits = request.limits;
  plan.placement = request.placement;
  if (secret_bytes(plan) > options_.max_secret_bytes)
    return Error::make("kubernetes", "stdin, files and credentials come to " + std::to_string(secret_bytes(plan)) +
                                         " bytes, over the " + std::to_string(options_.max_secret_bytes) + " a pod's Secret may hold");
  return plan;
}

Result<std::unique_ptr<egress::EgressGateway::Admission>> KubernetesBackend::admit_to_gateway(
    const RunRequest& request, const RunContext& context, PodPlan& plan) const {
  if (!options_.gateway || !request.egress.has_egress()) return std::unique_ptr<egress::EgressGateway::Admission>();
  auto policy = egress::EgressPolicy::compile(request.egress);
  if (!policy) return policy.error();
  if (options_.forbidden)
    for (const auto& e : *options_.forbidden) policy->forbid(e);
  auto admitted = options_.gateway->admit(std::move(*policy), context.rule_set, context.invocation_id);
  if (!admitted) return admitted.error();
  plan.proxy = options_.gateway_route;
  plan.proxy->username = (*admitted)->username();
  plan.proxy->password = (*admitted)->password();
  return admitted;
}

// The Pod first, gated (schedulingGates) so that it cannot start; then its Secret and
// NetworkPolicy, owned by it; then the gate is lifted. Returns "" or why it failed.
Result<std::string> KubernetesBackend::create_objects(PodPlan& plan, Made& made) {
  auto pod = api_.create("pods", pod_json(plan));
  if (!pod && pod.error().code == "conflict") {  // the name is taken: one more, fresh name
    plan.name = pod_name(plan.invocation_id);
    pod = api_.create("pods", pod_json(plan));
  }
  if (!pod) return pod.error();
  made.pod = plan.name;
  std::string uid = (*pod)["metadata"].value("uid", "");
  if (uid.empty()) return Error::make("kubernetes", "the created pod has no uid");
  auto secret = api_.create("secrets", secret_json(plan, uid));
  if (!secret) return secret.error();
  made.secret = plan.name;
  auto policy = api_.create("networkpolicies", network_policy_json(plan, uid));
  if (!policy) return policy.error();
  made.network_policy = plan.name;
  json lift = json::array({{{"op", "test"}, {"path", "/spec/schedulingGates/0/name"}, {"value", kSchedulingGate}},
                           {{"op", "remove"}, {"path", "/spec/schedulingGates"}}});
  auto lifted = api_.json_patch("pods", plan.name, lift);
  if (!lifted) return lifted.error();
  return std::string();
}

RunResult KubernetesBackend::follow(const PodPlan& plan, WatchBreaker& breaker) {
  auto deadline = Clock::now() + plan.limits.wall_time + options_.pending_allowance;
  PodEnd end = watch_pod(api_, plan.name, deadline, breaker);
  std::string log;
  if (end.kind == PodEnd::Kind::finished) {
    auto read = api_.logs(plan.name, plan.limits.output_bytes + 1);
    if (!read) return setup_error("the pod ended but its log cannot be read: " + read.error().message);
    log = std::move(*read);
  }
  return outcome_of(end, log, plan.limits.output_bytes);
}

void KubernetesBackend::delete_objects(const Made& made) {
  // The Pod's deletion takes its Secret and NetworkPolicy with it; they are deleted too so
  // that nothing waits on the cluster's garbage collector.
  if (!made.network_policy.empty()) (void)api_.remove("networkpolicies", made.network_policy);
  if (!made.secret.empty()) (void)api_.remove("secrets", made.secret);
  if (!made.pod.empty()) (void)api_.remove("pods", made.pod);
}

RunResult KubernetesBackend::run(const RunRequest& request, const RunContext& context) {
  if (stopping_) return outcome_of(PodEnd{PodEnd::Kind::cancelled, json::object(), ""}, "", 0);
  auto started = Clock::now();
  auto planned = plan(request, context);
  if (!planned) return setup_error(planned.error().message);
  auto admission = admit_to_gateway(request, context, *planned);
  if (!admission) return setup_error(admission.error().message);
  WatchBreaker breaker;
  Made made;
  {
    std::lock_guard lock(mu_);
    running_[planned->name] = &breaker;
  }
  RunResult result;
  {
    CancelHook hook(context.cancel, [&breaker] { breaker.break_now(); });
    auto created = create_objects(*planned, made);
    if (!created) {
      result = setup_error(created.error().message);
      result.quota_exceeded = created.error().code == "quota_exceeded";
    }
    else result = follow(*planned, breaker);
  }
  {
    std::lock_guard lock(mu_);
    running_.erase(planned->name);
    if (!made.pod.empty()) running_.erase(made.pod);
  }
  delete_objects(made);
  if (*admission) result.egress = (*admission)->close();  // the pod is gone: so are its credentials
  result.usage.wall_ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
  return result;
}

}  // namespace airlock::backend::kubernetes
