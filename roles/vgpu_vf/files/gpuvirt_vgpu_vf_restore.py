# -*- coding: utf-8 -*-
# Managed by gpuvirt.provision (vgpu_vf role).
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Re-create NVIDIA vGPU VFs and their profiles at boot; installed by the gpuvirt.provision vgpu_vf role and run by
its systemd unit as ``python3 <this file> <config.json>``. Standard library only.

None of it survives a reboot (the VFs and every VF's nvidia/current_vgpu_type start empty), so this replays what the
role applied: for each GPU (PF) it waits for the driver's sysfs files, then for its VFs, then writes each VF's
saved type id, only where the VF is free and lists the id in nvidia/creatable_vgpu_types. A VF that holds another
type is left alone.

Who enables the VFs depends on where the vGPU Manager lives. Installed on the host (``sriov-manage`` is there), this
script runs ``sriov-manage -e <PF>``. Without it on the host, the vGPU Manager is the GPU Operator's container, which
enables the VFs itself: it loads the driver, sleeps DELAY_BEFORE_VF_CREATION (15 s by default) and runs
``sriov-manage -e ALL`` under ``set -e``; if that fails its EXIT trap disables the VFs and unloads the driver
(NVIDIA/gpu-driver-container vgpu-manager/rhel9/nvidia-driver, ``_load_driver``, ``_enable_vfs``, ``init``,
``_shutdown``). The driver's files appear at its ``modprobe nvidia``, long before that, so a write to sriov_numvfs
here would race the container's and could make either fail. This script then never writes sriov_numvfs: it waits,
within its timeout, for sriov_numvfs to turn non-zero and for each VF's nvidia/ files. Exit status 1 (anything not
restored) makes systemd start it again (``Restart=on-failure``), so a vGPU Manager later than the timeout is caught.

KubeVirt's virt-handler finds these VFs only when it starts (or when KubeVirt's configuration changes): it reads
the host's PCI devices once, takes an NVIDIA VF only while its nvidia/current_vgpu_type is set, and never adds a
device to a device plugin that already runs (kubevirt v1.9.0 pkg/virt-handler/device-manager/device_controller.go
``Run``, ``refreshPermittedDevices``, ``splitPermittedDevices``; ``pci_device.go``
``discoverPermittedHostPCIDevices``; ``nvidia.go`` ``shouldPermitNvidia``). Its container starts long before the
vGPU Manager enables the VFs, so after a start that wrote at least one profile this script stops the node's
virt-handler container through the CRI (``crictl``, at a fixed path, checked as ``sriov-manage`` is); the kubelet
starts it again, and the new one finds the VFs. Without crictl it says what to do instead (a warning line); either
way the exit status is the restore's.

The config is JSON written by the role from checked values, and every value is checked again here: PCI addresses,
decimal ids, absolute paths, a bounded timeout. Each line printed starts with a syslog priority (``<3>`` error,
``<4>`` warning, ``<6>`` info), which systemd puts in the journal as that line's priority (sd-daemon(3)).
Exit status: 0 all done, 1 something was not restored (the lines say what), 2 the config is unusable.

``<this file> --restart-virt-handler <VF>...`` does only the virt-handler step, for VFs whose profiles the role
changed over SSH (roles/vgpu_vf/tasks/main.yml); it exits 0 whatever the step found (2 for a bad argument).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import re
import stat
import subprocess
import sys
import time

BDF = re.compile(r'[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]')
PATH = re.compile(r'/[A-Za-z0-9._/-]{0,254}')
NUMBER = re.compile(r'[0-9]{1,9}')
CREATABLE = re.compile(r'([0-9]{1,9})[ \t]*:[ \t]*([A-Za-z0-9][A-Za-z0-9 ._-]{0,127})')
POLL = 1.0
# the CRI client, where cri-tools installs it (RHCOS: openshift/os packages-openshift.yaml, cri-tools; the cri-tools
# packages of pkgs.k8s.io) and where k3s/RKE2 link theirs; the first that exists is used
CRICTL = ('/usr/bin/crictl', '/usr/local/bin/crictl')
# the kubelet labels every container with its name (kubernetes pkg/kubelet/types/labels.go
# KubernetesContainerNameLabel); virt-handler's container is named virt-handler (kubevirt v1.9.0
# pkg/virt-operator/resource/generate/components/daemonsets.go VirtHandlerName, deployments.go newPodTemplateSpec)
VIRT_HANDLER_LABEL = 'io.kubernetes.container.name=virt-handler'
# ... in KubeVirt's own namespace only (the kubelet's io.kubernetes.pod.namespace label, same labels.go): any tenant
# may name a container virt-handler, none should make this script stop it. KubeVirt's namespace: kubevirt (its
# install manifests), openshift-cnv (OpenShift Virtualization), kubevirt-hyperconverged (HCO's own deploy manifests)
KUBEVIRT_NAMESPACES = ('kubevirt', 'openshift-cnv', 'kubevirt-hyperconverged')
# a journal line never carries a control character from another program's output (a forged <N> line, a terminal
# escape): each becomes '?'
CONTROL = re.compile(r'[\x00-\x1f\x7f]')
CONTAINER_ID = re.compile(r'[0-9a-f]{12,64}')
# seconds: crictl stop's grace before the runtime kills it, and each crictl call's own limit; together well inside the
# 60 s the unit's TimeoutStartSec leaves beyond the restore's own timeout
STOP_GRACE = 20
PS_LIMIT, STOP_LIMIT = 15, 30


class ConfigError(ValueError):
    pass


def say(priority, text):
    sys.stdout.write('<%d>%s\n' % (priority, CONTROL.sub('?', text)))
    sys.stdout.flush()


def _path(value, name):
    """The module's path grammar (module_utils vgpu_vf_profiles._path; a unit test holds the two to the same
    answers): absolute, letters, digits and ._/-, no . or .. component, no //, no trailing /."""
    if (not isinstance(value, str) or not PATH.fullmatch(value) or '//' in value
            or (value != '/' and value.endswith('/'))
            or any(part in ('.', '..') for part in value.split('/'))):
        raise ConfigError('%s is %r; expected a normalised absolute path of letters, digits and ._/-' % (name, value))
    return value


def trusted(value, name, kind='file', missing_ok=False):
    """The module's trusted-path rule (vgpu_vf_profiles.trusted_path): it and every directory above it owned by
    root, not group/world-writable (a parent may be with the sticky bit), no symlink anywhere (lstat). Returns
    whether it exists."""
    _path(value, name)
    parts = [part for part in value.split('/') if part]
    chain = ['/'] + ['/' + '/'.join(parts[:i + 1]) for i in range(len(parts))]
    st = None
    for i, path in enumerate(chain):
        leaf = i == len(chain) - 1
        try:
            st = os.lstat(path)
        except OSError as e:
            if e.errno == errno.ENOENT and missing_ok:
                return False
            raise ConfigError('%s is %s, and %s cannot be read: %s' % (name, value, path, e))
        mode = st.st_mode
        if stat.S_ISLNK(mode):
            raise ConfigError('%s is %s, and %s is a symbolic link' % (name, value, path))
        if not leaf and not stat.S_ISDIR(mode):
            raise ConfigError('%s is %s, and %s is not a directory' % (name, value, path))
        if st.st_uid != 0:
            raise ConfigError('%s is %s, and %s is owned by uid %d, not root' % (name, value, path, st.st_uid))
        if mode & 0o022 and (leaf or not mode & stat.S_ISVTX):
            raise ConfigError('%s is %s, and %s is group- or world-writable (mode %04o)'
                              % (name, value, path, stat.S_IMODE(mode)))
    if kind == 'file' and not stat.S_ISREG(st.st_mode):
        raise ConfigError('%s is %s, which is not a regular file' % (name, value))
    if kind == 'dir' and not stat.S_ISDIR(st.st_mode):
        raise ConfigError('%s is %s, which is not a directory' % (name, value))
    return True


def trusted_executable(value, name, missing_ok=False):
    """vgpu_vf_profiles.trusted_executable: the rule, the last component may be a root-owned symlink whose resolved
    target passes the rule as a regular file."""
    _path(value, name)
    try:
        st = os.lstat(value)
    except OSError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        trusted(os.path.dirname(value), name + ' (its directory)', kind='dir')
        if st.st_uid != 0:
            raise ConfigError('%s is %s, a symbolic link owned by uid %d, not root' % (name, value, st.st_uid))
        return trusted(os.path.realpath(value), '%s (%s, resolved)' % (name, value), kind='file')
    return trusted(value, name, kind='file', missing_ok=missing_ok)


def _trusted_dir(value, name, missing_ok=False):
    trusted(value, name, kind='dir', missing_ok=missing_ok)
    return value


CONFIG_LIMIT = 1024 * 1024


def read_config(path):
    """The config's bytes: a regular file (lstat and fstat; a FIFO would block), no link followed, at most 1 MiB."""
    fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError('%s is not a regular file' % path)
        chunks, left = [], CONFIG_LIMIT + 1
        while left > 0:
            chunk = os.read(fd, min(left, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b''.join(chunks)
    finally:
        os.close(fd)
    if len(data) > CONFIG_LIMIT:
        raise ConfigError('%s is larger than %d bytes' % (path, CONFIG_LIMIT))
    return data


def load(path):
    """The checked config: {sysfs_root, sriov_manage, timeout, gpus: [(pf, [(vf, id)])], types: {id: name}}."""
    try:
        data = json.loads(read_config(path).decode('utf-8'))
    except (IOError, OSError, ValueError, RecursionError) as e:
        raise ConfigError('cannot read %s as JSON: %s' % (path, str(e)[:200] or type(e).__name__))
    if not isinstance(data, dict) or data.get('version') != 1:
        raise ConfigError('%s is not a version 1 config of the vgpu_vf role' % path)
    timeout = data.get('timeout')
    if not isinstance(timeout, int) or isinstance(timeout, bool) or not 10 <= timeout <= 3600:
        raise ConfigError('timeout is %r; expected 10 to 3600 seconds' % (timeout,))
    if not isinstance(data.get('gpus'), list) or not isinstance(data.get('types', {}), dict):
        raise ConfigError('%s: gpus is %r and types %r; expected a list and an object'
                          % (path, data.get('gpus'), data.get('types')))
    gpus = []
    for gpu in data['gpus']:
        pf = gpu.get('pf') if isinstance(gpu, dict) else None
        vfs = gpu.get('vfs') if isinstance(gpu, dict) else None
        if not isinstance(pf, str) or not BDF.fullmatch(pf) or not isinstance(vfs, dict):
            raise ConfigError('GPU entry %r is not {pf: <PCI address>, vfs: {<VF address>: <type id>}}' % (gpu,))
        pairs = []
        for vf, tid in sorted(vfs.items()):
            if not BDF.fullmatch(vf) or not isinstance(tid, int) or isinstance(tid, bool) or not 0 < tid < 10 ** 9:
                raise ConfigError('VF entry %r: %r is not <VF PCI address>: <positive type id>' % (vf, tid))
            pairs.append((vf, str(tid)))
        gpus.append((pf, pairs))
    types = data.get('types') or {}
    names = dict((k, v) for k, v in types.items() if isinstance(k, str) and NUMBER.fullmatch(k)
                 and isinstance(v, str) and CREATABLE.fullmatch('0 : ' + v)) if isinstance(types, dict) else {}
    # the root may not be there yet at boot (a sysfs root other than /sys appears when what provides it starts, as
    # the driver's files do): checked now as far as it exists, and again, whole, before the first write
    return {'sysfs_root': _trusted_dir(data.get('sysfs_root'), 'sysfs_root', missing_ok=True),
            'sriov_manage': _path(data.get('sriov_manage'), 'sriov_manage'), 'timeout': timeout, 'gpus': gpus,
            'types': names}


def read(path):
    try:
        with open(path) as handle:
            return handle.read(65536).strip()
    except (IOError, OSError):
        return None


def write(path, value):
    """One sysfs attribute: no link followed at the last component, nothing created or truncated."""
    fd = os.open(path, os.O_WRONLY | getattr(os, 'O_NOFOLLOW', 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise OSError(errno.EPERM, 'not a sysfs attribute (a special file, or a file with %d links)' % st.st_nlink)
        os.write(fd, value.encode('ascii'))
        try:
            os.ftruncate(fd, len(value))
        except OSError:
            pass
    finally:
        os.close(fd)


def wait_for(paths, deadline):
    """The paths still missing when the deadline passed ([] once all are there)."""
    while True:
        missing = [p for p in paths if not os.path.exists(p)]
        if not missing or time.monotonic() >= deadline:
            return missing
        time.sleep(POLL)


def wait_until(ready, deadline):
    """Whether ``ready()`` came true before the deadline."""
    while True:
        if ready():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL)


def creatable(text):
    return [m.group(1) for m in (CREATABLE.fullmatch(line.strip()) for line in (text or '').splitlines()) if m]


def restore_gpu(cfg, pf, pairs, deadline, written=None):
    """Enable the PF's VFs and set their types; the number of VFs not restored. Each VF given a profile is appended
    to ``written``."""
    dev = os.path.join(cfg['sysfs_root'], 'bus', 'pci', 'devices')
    pf_dir = os.path.join(dev, pf)
    pf_files = [os.path.join(pf_dir, 'sriov_numvfs'), os.path.join(pf_dir, 'driver')]
    absent = [p for p in pf_files if not os.path.exists(p)]
    started = time.monotonic()
    if absent:
        # the journal shows that the restore waited for the driver (and for how long), not just what it did after
        say(6, 'GPU %s: waiting up to %ds for %s (the driver is not loaded yet)'
            % (pf, max(0, int(round(deadline - started))), ', '.join(absent)))
    missing = wait_for(pf_files, deadline)
    if absent and not missing:
        say(6, 'GPU %s: the driver\'s files appeared after %.1fs' % (pf, time.monotonic() - started))
    if missing:
        say(3, 'GPU %s: timed out after %ds waiting for %s; is the NVIDIA vGPU Manager loaded? Nothing restored on it'
            % (pf, cfg['timeout'], ', '.join(missing)))
        return len(pairs) or 1
    try:
        _trusted_dir(cfg['sysfs_root'], 'sysfs_root')
    except ConfigError as e:
        say(3, 'GPU %s: %s; nothing restored on it' % (pf, e))
        return len(pairs) or 1
    numvfs_path = os.path.join(pf_dir, 'sriov_numvfs')
    if read(numvfs_path) in ('0', '', None):
        script = cfg['sriov_manage']
        try:
            # checked again just before it runs as root: absent means the GPU Operator's container enables the VFs
            there = trusted_executable(script, 'sriov_manage', missing_ok=True)
        except ConfigError as e:
            say(3, 'GPU %s: %s; its VFs are not enabled' % (pf, e))
            return len(pairs) or 1
        if there and os.access(script, os.X_OK):
            try:
                say(6, 'GPU %s: enabling VFs with %s -e %s' % (pf, script, pf))
                # Python 3.6 keywords only: EL8's /usr/bin/python3 is 3.6, which has no capture_output= or text=
                proc = subprocess.run([script, '-e', pf], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      universal_newlines=True, timeout=120, check=False)
            except (IOError, OSError, subprocess.SubprocessError) as e:
                say(3, 'GPU %s: enabling its VFs failed: %s' % (pf, e))
                return len(pairs) or 1
            if proc.returncode != 0:
                detail = (proc.stderr or proc.stdout).strip()[:500]
                say(3, 'GPU %s: %s -e %s failed (rc %d): %s' % (pf, script, pf, proc.returncode, detail))
                return len(pairs) or 1
        else:
            # the GPU Operator's vGPU Manager container enables them after its delay (module docstring): wait for
            # its VFs, never write sriov_numvfs beside it
            say(6, 'GPU %s: no executable %s on this host; waiting up to %ds for the vGPU Manager container to enable the '
                'VFs (sriov_numvfs reads 0)' % (pf, script, max(0, int(round(deadline - time.monotonic())))))
            waited = time.monotonic()
            if not wait_until(lambda: read(numvfs_path) not in ('0', '', None), deadline):
                say(3, 'GPU %s: timed out after %ds waiting for its VFs (sriov_numvfs still reads 0); is the GPU '
                    "Operator's vGPU Manager running on this node? Nothing restored on it" % (pf, cfg['timeout']))
                return len(pairs) or 1
            say(6, 'GPU %s: %s VFs enabled after %.1fs' % (pf, read(numvfs_path), time.monotonic() - waited))
    failed = 0
    for vf, tid in pairs:
        name = '%s (%s)' % (cfg['types'].get(tid, 'type'), tid)
        ndir = os.path.join(dev, vf, 'nvidia')
        current_path = os.path.join(ndir, 'current_vgpu_type')
        missing = wait_for([current_path, os.path.join(ndir, 'creatable_vgpu_types')], deadline)
        if missing:
            say(3, 'VF %s: timed out after %ds waiting for %s; %s not restored'
                % (vf, cfg['timeout'], ', '.join(missing), name))
            failed += 1
            continue
        current = read(current_path)
        if current == tid:
            say(6, 'VF %s already on %s' % (vf, name))
            continue
        if current not in ('0', ''):
            say(4, 'VF %s holds type %r, not %s: left alone' % (vf, (current or '')[:16], name))
            failed += 1
            continue
        if tid not in creatable(read(os.path.join(ndir, 'creatable_vgpu_types'))):
            say(3, 'VF %s does not list %s as creatable; not restored (has the GPU another type now?)' % (vf, name))
            failed += 1
            continue
        try:
            write(current_path, tid)
        except (IOError, OSError) as e:
            say(3, 'VF %s: writing %s to %s failed: %s' % (vf, tid, current_path, e))
            failed += 1
            continue
        say(6, 'VF %s got %s' % (vf, name))
        if written is not None:
            written.append(vf)
    return failed


def _run(argv, limit):
    """(rc, stdout, stderr text) of a fixed argument vector, never a shell; (None, '', reason) when it did not run."""
    try:
        # Python 3.6 keywords only (EL8's /usr/bin/python3): no capture_output= or text=
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                              timeout=limit, check=False)
    except (IOError, OSError, subprocess.SubprocessError) as e:
        return None, '', str(e)[:300]
    return proc.returncode, proc.stdout or '', (proc.stderr or proc.stdout or '').strip()[:500]


def restart_virt_handler(written):
    """After ``written`` (VFs given a profile by this start; nothing is done for none): stop the node's virt-handler
    container so the kubelet starts a new one, which finds the VFs (module docstring). Returns the container ids
    stopped. Never fails the restore: each problem is one warning line saying what to do instead."""
    if not written:
        return []
    count = len(written)
    why = ('%d VF profile(s) changed on this node; KubeVirt finds VFs only when its virt-handler starts' % count)
    todo = ('restart virt-handler on this node (kubectl -n <KubeVirt namespace: kubevirt, or openshift-cnv> delete '
            'pod -l kubevirt.io=virt-handler --field-selector spec.nodeName=<this node>)')
    crictl = None
    for path in CRICTL:
        try:
            if trusted_executable(path, 'crictl', missing_ok=True):
                crictl = path
                break
        except ConfigError as e:
            say(4, '%s, but %s: not run; %s' % (why, e, todo))
            return []
    if crictl is None or not os.access(crictl, os.X_OK):
        say(4, '%s, and there is no crictl (%s) to restart it: %s, or install cri-tools' % (why, ' or '.join(CRICTL), todo))
        return []
    ids = []
    for namespace in KUBEVIRT_NAMESPACES:
        rc, out, err = _run([crictl, 'ps', '--quiet', '--state', 'running', '--label', VIRT_HANDLER_LABEL,
                             '--label', 'io.kubernetes.pod.namespace=' + namespace], PS_LIMIT)
        if rc != 0:
            say(4, '%s; %s ps failed (%s): %s' % (why, crictl, (err or 'rc %s' % rc).splitlines()[0], todo))
            return []
        found = [line.strip() for line in out.splitlines() if line.strip()]
        bad = [i for i in found if not CONTAINER_ID.fullmatch(i)]
        if bad:
            say(4, '%s; %s ps printed %r, not container ids: nothing stopped; %s' % (why, crictl, bad[0][:80], todo))
            return []
        ids.extend(i for i in found if i not in ids)
    if not ids:
        say(6, '%s; no virt-handler container runs on this node yet: it will find them when it starts' % why)
        return []
    # virt-handler is a DaemonSet: one pod, one such container per node. More is not what this script knows how to
    # restart (two KubeVirt installs, or a container that only took the name): it stops none of them
    if len(ids) > 1:
        say(4, '%s; %d containers named virt-handler run in %s: nothing stopped; %s'
            % (why, len(ids), ', '.join(KUBEVIRT_NAMESPACES), todo))
        return []
    stopped = []
    for cid in ids:
        rc, out, err = _run([crictl, 'stop', '--timeout', str(STOP_GRACE), cid], STOP_LIMIT)
        if rc != 0:
            say(4, '%s; %s stop %s failed (%s): %s' % (why, crictl, cid, (err or 'rc %s' % rc).splitlines()[0], todo))
            continue
        stopped.append(cid)
    if stopped:
        say(6, '%s: stopped its container %s with %s; the kubelet starts it again'
            % (why, ', '.join(c[:13] for c in stopped), crictl))
    return stopped


def main(argv):
    if len(argv) > 2 and argv[1] == '--restart-virt-handler':
        # the role, after its own run changed VF profiles over SSH: only the restart, for those VFs
        if not all(BDF.fullmatch(vf) for vf in argv[2:]):
            say(3, 'usage: %s --restart-virt-handler <VF PCI address>...' % argv[0])
            return 2
        restart_virt_handler(argv[2:])
        return 0
    if len(argv) != 2:
        say(3, 'usage: %s <config.json> | --restart-virt-handler <VF PCI address>...' % argv[0])
        return 2
    try:
        cfg = load(argv[1])
    except ConfigError as e:
        say(3, str(e))
        return 2
    deadline = time.monotonic() + cfg['timeout']
    written = []
    failed = sum(restore_gpu(cfg, pf, pairs, deadline, written) for pf, pairs in cfg['gpus'])
    if failed:
        say(3, '%d vGPU profile(s) not restored; see the lines above' % failed)
    else:
        say(6, 'vGPU profiles restored on %d GPU(s)' % len(cfg['gpus']))
    # after any profile written, also when others failed: KubeVirt takes the VFs that have one
    restart_virt_handler(written)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
