import { useState } from 'react';
import {
  Alert,
  Button,
  Form,
  FormGroup,
  FormHelperText,
  FormSelect,
  FormSelectOption,
  HelperText,
  HelperTextItem,
  Modal,
  ModalBody,
  ModalFooter,
  ModalHeader,
  TextInput,
} from '@patternfly/react-core';
import { APIError, create, paths } from './k8s';
import { emptyForm, fieldOfCause, formErrors, IPMode, PolicyForm, policyFromForm } from './policy';

type Errors = Partial<Record<keyof PolicyForm, string>>;

// PolicyFormModal creates a policy from a form. The result is first sent
// as a server-side dry-run, so the API server (the CRD schema and the
// admission webhook) checks it and its path-named errors show next to the
// field they are about; only then is it created.
export function PolicyFormModal({ onClose }: { onClose: () => void }) {
  const [f, setF] = useState<PolicyForm>(emptyForm());
  const [errors, setErrors] = useState<Errors>({});
  const [general, setGeneral] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const set = (k: keyof PolicyForm) => (_e: unknown, v: string) => setF({ ...f, [k]: v });

  const submit = async () => {
    const local = formErrors(f);
    setErrors(local);
    setGeneral([]);
    if (Object.keys(local).length > 0) return;
    setBusy(true);
    const policy = policyFromForm(f);
    try {
      await create(paths.policies, policy, true);
      await create(paths.policies, policy);
      onClose();
    } catch (e) {
      if (e instanceof APIError && e.causes.length > 0) {
        const byField: Errors = {};
        const rest: string[] = [];
        for (const c of e.causes) {
          const field = fieldOfCause(c.field ?? '');
          const msg = `${c.field ? c.field + ': ' : ''}${c.message ?? ''}`;
          if (field) byField[field] = byField[field] ? `${byField[field]}; ${msg}` : msg;
          else rest.push(msg);
        }
        setErrors(byField);
        setGeneral(rest.length > 0 || Object.keys(byField).length === 0 ? [e.message, ...rest] : []);
      } else {
        setGeneral([e instanceof Error ? e.message : String(e)]);
      }
    } finally {
      setBusy(false);
    }
  };

  const text = (k: keyof PolicyForm, label: string, placeholder = '', required = false) => (
    <FormGroup label={label} fieldId={`form-${k}`} isRequired={required}>
      <TextInput
        id={`form-${k}`}
        data-test={`form-${k}`}
        value={f[k] as string}
        placeholder={placeholder}
        onChange={set(k)}
        validated={errors[k] ? 'error' : 'default'}
      />
      {errors[k] && (
        <FormHelperText>
          <HelperText>
            <HelperTextItem variant="error" data-test={`error-${k}`}>
              {errors[k]}
            </HelperTextItem>
          </HelperText>
        </FormHelperText>
      )}
    </FormGroup>
  );
  const ip = (k: 'ipv4' | 'ipv6', addr: 'ipv4Address' | 'ipv6Address', label: string) => (
    <>
      <FormGroup label={label} fieldId={`form-${k}`}>
        <FormSelect id={`form-${k}`} data-test={`form-${k}`} value={f[k]} onChange={(_e, v) => setF({ ...f, [k]: v as IPMode })}>
          <FormSelectOption value="disabled" label="disabled" />
          <FormSelectOption value="dhcp" label={k === 'ipv6' ? 'DHCP and autoconf' : 'DHCP'} />
          <FormSelectOption value="static" label="static" />
        </FormSelect>
      </FormGroup>
      {f[k] === 'static' && text(addr, `${label} addresses`, k === 'ipv4' ? '192.0.2.10/24' : '2001:db8::10/64')}
    </>
  );

  return (
    <Modal isOpen onClose={onClose} variant="medium" aria-label="create policy">
      <ModalHeader title="Create a policy" />
      <ModalBody>
        {general.map((g) => (
          <Alert key={g} variant="danger" isInline title={g} data-test="form-error" />
        ))}
        <Form onSubmit={(e) => (e.preventDefault(), submit())}>
          {text('name', 'Policy name', 'br1-eth1', true)}
          {text('nodeSelector', 'Node selector', 'kubernetes.io/hostname=node1')}
          <FormGroup label="Interface type" fieldId="form-ifaceType">
            <FormSelect id="form-ifaceType" data-test="form-ifaceType" value={f.ifaceType} onChange={(_e, v) => setF({ ...f, ifaceType: v as PolicyForm['ifaceType'] })}>
              <FormSelectOption value="linux-bridge" label="Linux bridge" />
              <FormSelectOption value="bond" label="bond" />
              <FormSelectOption value="vlan" label="VLAN" />
              <FormSelectOption value="ethernet" label="ethernet" />
            </FormSelect>
          </FormGroup>
          {text('ifaceName', 'Interface name', 'br1', true)}
          {(f.ifaceType === 'bond' || f.ifaceType === 'linux-bridge') && text('ports', 'Ports', 'eth1, eth2')}
          {f.ifaceType === 'bond' && (
            <FormGroup label="Bond mode" fieldId="form-bondMode">
              <FormSelect id="form-bondMode" value={f.bondMode} onChange={set('bondMode')}>
                {['active-backup', 'balance-rr', 'balance-xor', 'broadcast', '802.3ad', 'balance-tlb', 'balance-alb'].map((m) => (
                  <FormSelectOption key={m} value={m} label={m} />
                ))}
              </FormSelect>
              {errors.bondMode && (
                <FormHelperText>
                  <HelperText>
                    <HelperTextItem variant="error">{errors.bondMode}</HelperTextItem>
                  </HelperText>
                </FormHelperText>
              )}
            </FormGroup>
          )}
          {f.ifaceType === 'vlan' && (
            <>
              {text('vlanBase', 'Base interface', 'eth1', true)}
              {text('vlanId', 'VLAN id', '100', true)}
            </>
          )}
          {ip('ipv4', 'ipv4Address', 'IPv4')}
          {ip('ipv6', 'ipv6Address', 'IPv6')}
        </Form>
      </ModalBody>
      <ModalFooter>
        <Button variant="primary" onClick={submit} isLoading={busy} isDisabled={busy} data-test="form-create">
          Create
        </Button>
        <Button variant="link" onClick={onClose}>
          Cancel
        </Button>
      </ModalFooter>
    </Modal>
  );
}
