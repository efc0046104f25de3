-- Argo CD health of every edgeward.dev kind, read from the operator's conditions:
--   Synced=False reason Paused (edgeward.dev/paused: "true")       -> Suspended
--   Ready not yet written, or written for an older generation    -> Progressing
--   Ready=True                                                   -> Healthy
--   Ready=False with a reason only a spec change can fix         -> Degraded
--   anything else (waiting on a reference, the API unavailable)  -> Progressing
-- and, for a Ready object, how what it asked the server for is doing:
--   CertificateReady=False reason DnsError (AgentIngress)         -> Degraded
--   CertificateReady=False otherwise (Provisioning, Retrying)     -> Progressing
local terminal = {
  InvalidSpec = true,
  AdoptTargetNotFound = true,
  SecretConflict = true,
  TokenUnavailable = true,
  CertificateMismatch = true,
}

local function condition(type)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local function said(c)
  local reason = c.reason or c.status
  if c.message ~= nil and c.message ~= "" then
    return reason .. ": " .. c.message
  end
  return reason
end

local synced = condition("Synced")
if synced ~= nil and synced.status == "False" and synced.reason == "Paused" then
  return { status = "Suspended", message = said(synced) }
end

local ready = condition("Ready")
if ready == nil then
  return { status = "Progressing", message = "Waiting for the operator to reconcile it" }
end
local generation = obj.metadata.generation
if generation ~= nil and ready.observedGeneration ~= nil and ready.observedGeneration < generation then
  return {
    status = "Progressing",
    message = "Waiting for the operator to reconcile generation " .. generation,
  }
end
if ready.status == "True" then
  local certificate = condition("CertificateReady")
  if certificate ~= nil and certificate.status == "False" then
    if certificate.reason == "DnsError" then
      return { status = "Degraded", message = said(certificate) }
    end
    return { status = "Progressing", message = said(certificate) }
  end
  return { status = "Healthy", message = ready.message or "" }
end
if ready.status == "False" and ready.reason ~= nil and terminal[ready.reason] then
  return { status = "Degraded", message = said(ready) }
end
return { status = "Progressing", message = said(ready) }
