// FunctionRef: a non-owning reference to a callable (two pointers, no allocation). Bound steps the
// boundary builds at construction are handed to the per-forward stream this way; the referenced
// callable must outlive every use (it lives in the stage plan).
#pragma once

#include <type_traits>
#include <utility>

namespace seam::residual {

template <class Signature>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  FunctionRef() = default;
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> && std::is_invocable_r_v<R, F&, Args...>)
  FunctionRef(F& callable)  // NOLINT: implicit, like a function pointer
      : object_(const_cast<void*>(static_cast<const void*>(&callable))), call_([](void* object, Args... args) -> R {
          return (*static_cast<F*>(object))(std::forward<Args>(args)...);
        }) {}

  explicit operator bool() const { return call_ != nullptr; }
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_ = nullptr;
  R (*call_)(void*, Args...) = nullptr;
};

}  // namespace seam::residual
