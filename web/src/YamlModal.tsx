import { useEffect, useState } from 'react';
import { Alert, Button, Modal, ModalBody, ModalFooter, ModalHeader, TextArea } from '@patternfly/react-core';
import { parse } from 'yaml';
import { APIError, create, get, paths, replace } from './k8s';
import type { Policy } from './policy';
import { clean, toYAML } from './Yaml';

const template = `apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: example
spec:
  nodeSelector:
    kubernetes.io/hostname: node1
  desiredState:
    interfaces:
      - name: br1
        type: linux-bridge
        state: up
        bridge:
          port: []
`;

// YamlModal creates a policy from YAML, or (with name) edits one: the
// current object is read fresh, and the update carries its
// resourceVersion, so a change made meanwhile is refused, not overwritten.
export function YamlModal({ name, onClose }: { name?: string; onClose: () => void }) {
  const [text, setText] = useState(name ? '' : template);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (!name) return;
    get<Policy>(`${paths.policies}/${encodeURIComponent(name)}`)
      .then((p) => {
        const c = clean(p as unknown as { metadata: Record<string, unknown> }) as unknown as Policy;
        delete (c as { status?: unknown }).status;
        setText(toYAML(c));
      })
      .catch((e) => setError(String(e.message ?? e)));
  }, [name]);
  const save = async () => {
    setBusy(true);
    setError('');
    try {
      const obj = parse(text) as Policy;
      if (!obj?.metadata?.name) throw new Error('metadata.name: a policy needs a name');
      if (name) await replace(paths.policies, obj);
      else await create(paths.policies, obj);
      onClose();
    } catch (e) {
      const causes = e instanceof APIError ? e.causes.map((c) => `${c.field}: ${c.message}`) : [];
      setError([e instanceof Error ? e.message : String(e), ...causes.filter((c) => !(e as Error).message.includes(c))].join('\n'));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal isOpen onClose={onClose} variant="large" aria-label="policy YAML">
      <ModalHeader title={name ? `Edit ${name}` : 'Create a policy from YAML'} />
      <ModalBody>
        {error && (
          <Alert variant="danger" isInline title="The API server refused it" data-test="yaml-error">
            <pre>{error}</pre>
          </Alert>
        )}
        <TextArea className="knm-yaml-editor" aria-label="YAML" data-test="yaml-text" value={text} onChange={(_e, v) => setText(v)} resizeOrientation="vertical" />
      </ModalBody>
      <ModalFooter>
        <Button variant="primary" onClick={save} isLoading={busy} isDisabled={busy || text === ''} data-test="yaml-save">
          {name ? 'Save' : 'Create'}
        </Button>
        <Button variant="link" onClick={onClose}>
          Cancel
        </Button>
      </ModalFooter>
    </Modal>
  );
}
