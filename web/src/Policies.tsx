import { useState } from 'react';
import {
  Alert,
  Button,
  Content,
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  Drawer,
  DrawerActions,
  DrawerCloseButton,
  DrawerContent,
  DrawerContentBody,
  DrawerHead,
  DrawerPanelBody,
  DrawerPanelContent,
  Label,
  Modal,
  ModalBody,
  ModalFooter,
  ModalHeader,
  PageSection,
  Tab,
  Tabs,
  Title,
  Toolbar,
  ToolbarContent,
  ToolbarItem,
} from '@patternfly/react-core';
import { ActionsColumn, Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { go, Route } from './route';
import { paths, remove, Watched } from './k8s';
import {
  countsByPolicy,
  emptyCounts,
  Enactment,
  enactmentMessage,
  enactmentNode,
  enactmentsOf,
  EnactmentState,
  enactmentState,
  enactmentStates,
  Policy,
  policyCondition,
} from './policy';
import { PolicyFormModal } from './PolicyForm';
import { YamlModal } from './YamlModal';
import { clean, YamlView } from './Yaml';

const stateColor: Record<EnactmentState, 'green' | 'blue' | 'red' | 'orange' | 'grey'> = {
  Available: 'green',
  Progressing: 'blue',
  Failing: 'red',
  Aborted: 'orange',
  Pending: 'grey',
};

function StateLabel({ state }: { state?: string }) {
  if (!state) return <Label>unknown</Label>;
  const color = (stateColor as Record<string, 'green' | 'blue' | 'red' | 'orange' | 'grey'>)[state] ?? (state === 'Degraded' ? 'red' : 'grey');
  return <Label color={color}>{state}</Label>;
}

type Dialog = { kind: 'form' } | { kind: 'yaml'; name?: string } | { kind: 'delete'; name: string } | undefined;

export function PoliciesPage({
  route,
  policies,
  enactments,
  nodes,
}: {
  route: Route;
  policies: Watched<Policy>;
  enactments: Enactment[];
  nodes: number;
}) {
  const [dialog, setDialog] = useState<Dialog>();
  const [tab, setTab] = useState<string | number>('enactments');
  const [deleteError, setDeleteError] = useState('');
  const counts = countsByPolicy(enactments);
  const open = policies.items.find((p) => p.metadata.name === route.name);
  const openEnactments = open ? enactmentsOf(open.metadata.name, enactments) : [];

  const panel = (
    <DrawerPanelContent widths={{ default: 'width_50' }} data-test="policy-drawer">
      <DrawerHead>
        <Title headingLevel="h2">{open?.metadata.name}</Title>
        <DrawerActions>
          <DrawerCloseButton onClick={() => go({ page: 'policies', name: '' })} />
        </DrawerActions>
      </DrawerHead>
      <DrawerPanelBody>
        {open && (
          <Tabs activeKey={tab} onSelect={(_e, k) => setTab(k)}>
            <Tab eventKey="enactments" title={`Enactments (${openEnactments.length})`}>
              <Table aria-label="enactments" variant="compact" data-test="enactments">
                <Thead>
                  <Tr>
                    <Th>Node</Th>
                    <Th>State</Th>
                    <Th>Message</Th>
                  </Tr>
                </Thead>
                <Tbody>
                  {openEnactments.map((e) => (
                    <Tr key={e.metadata.name} data-node={enactmentNode(e)} data-state={enactmentState(e) ?? ''}>
                      <Td dataLabel="Node">{enactmentNode(e)}</Td>
                      <Td dataLabel="State">
                        <StateLabel state={enactmentState(e)} />
                      </Td>
                      <Td dataLabel="Message" modifier="breakWord">
                        <pre style={{ whiteSpace: 'pre-wrap', margin: 0 }} data-test="enactment-message">
                          {enactmentMessage(e)}
                        </pre>
                      </Td>
                    </Tr>
                  ))}
                </Tbody>
              </Table>
            </Tab>
            <Tab eventKey="details" title="Details">
              <DescriptionList isCompact style={{ marginTop: 16 }}>
                <DescriptionListGroup>
                  <DescriptionListTerm>Status</DescriptionListTerm>
                  <DescriptionListDescription>
                    <StateLabel state={policyCondition(open)?.type} /> {policyCondition(open)?.message}
                  </DescriptionListDescription>
                </DescriptionListGroup>
                <DescriptionListGroup>
                  <DescriptionListTerm>Node selector</DescriptionListTerm>
                  <DescriptionListDescription>
                    {Object.entries(open.spec?.nodeSelector ?? {})
                      .map(([k, v]) => `${k}=${v}`)
                      .join(', ') || 'every node'}
                  </DescriptionListDescription>
                </DescriptionListGroup>
                <DescriptionListGroup>
                  <DescriptionListTerm>Interfaces</DescriptionListTerm>
                  <DescriptionListDescription>
                    {(open.spec?.desiredState?.interfaces ?? []).map((i) => `${i.name} (${String(i.type ?? '')})`).join(', ') || 'none'}
                  </DescriptionListDescription>
                </DescriptionListGroup>
                <DescriptionListGroup>
                  <DescriptionListTerm>Created</DescriptionListTerm>
                  <DescriptionListDescription>{open.metadata.creationTimestamp}</DescriptionListDescription>
                </DescriptionListGroup>
              </DescriptionList>
            </Tab>
            <Tab eventKey="yaml" title="YAML">
              <YamlView obj={clean(open as unknown as { metadata: Record<string, unknown> })} />
            </Tab>
          </Tabs>
        )}
      </DrawerPanelBody>
    </DrawerPanelContent>
  );

  return (
    <PageSection isFilled>
      <Title headingLevel="h2">Node network configuration policies</Title>
      <Toolbar>
        <ToolbarContent>
          <ToolbarItem>
            <Button variant="primary" onClick={() => setDialog({ kind: 'form' })} data-test="create-form">
              Create policy
            </Button>
          </ToolbarItem>
          <ToolbarItem>
            <Button variant="secondary" onClick={() => setDialog({ kind: 'yaml' })} data-test="create-yaml">
              Create from YAML
            </Button>
          </ToolbarItem>
          <ToolbarItem>
            <Content component="small">{`${nodes} nodes reporting`}</Content>
          </ToolbarItem>
        </ToolbarContent>
      </Toolbar>
      {policies.error && <Alert variant="danger" isInline title={`Policies: ${policies.error}`} />}
      <Drawer isExpanded={!!open} isInline>
        <DrawerContent panelContent={panel}>
          <DrawerContentBody>
            <Table aria-label="policies" variant="compact" data-test="policies">
              <Thead>
                <Tr>
                  <Th>Name</Th>
                  <Th>Status</Th>
                  {enactmentStates.map((s) => (
                    <Th key={s}>{s}</Th>
                  ))}
                  <Th screenReaderText="actions" />
                </Tr>
              </Thead>
              <Tbody>
                {policies.items.map((p) => {
                  const c = counts.get(p.metadata.name) ?? emptyCounts();
                  return (
                    <Tr key={p.metadata.name} data-policy={p.metadata.name} isRowSelected={open?.metadata.name === p.metadata.name}>
                      <Td dataLabel="Name">
                        <Button variant="link" isInline onClick={() => go({ page: 'policies', name: p.metadata.name })} data-test="policy-open">
                          {p.metadata.name}
                        </Button>
                      </Td>
                      <Td dataLabel="Status" data-test="policy-status">
                        <StateLabel state={policyCondition(p)?.type} />
                      </Td>
                      {enactmentStates.map((s) => (
                        <Td key={s} dataLabel={s} data-count={s}>
                          {c[s] > 0 ? <Label color={stateColor[s]}>{c[s]}</Label> : '0'}
                        </Td>
                      ))}
                      <Td isActionCell>
                        <ActionsColumn
                          items={[
                            { title: 'Edit YAML', onClick: () => setDialog({ kind: 'yaml', name: p.metadata.name }) },
                            { title: 'Delete', onClick: () => setDialog({ kind: 'delete', name: p.metadata.name }) },
                          ]}
                        />
                      </Td>
                    </Tr>
                  );
                })}
              </Tbody>
            </Table>
            {policies.loaded && policies.items.length === 0 && <Content component="p">No policies yet.</Content>}
          </DrawerContentBody>
        </DrawerContent>
      </Drawer>
      {dialog?.kind === 'form' && <PolicyFormModal onClose={() => setDialog(undefined)} />}
      {dialog?.kind === 'yaml' && <YamlModal name={dialog.name} onClose={() => setDialog(undefined)} />}
      {dialog?.kind === 'delete' && (
        <Modal isOpen variant="small" onClose={() => setDialog(undefined)} aria-label="delete policy">
          <ModalHeader title={`Delete ${dialog.name}?`} titleIconVariant="warning" />
          <ModalBody>
            Deleting a policy does not undo what it configured on the nodes: apply a policy with the interfaces absent to remove them.
            {deleteError && <Alert variant="danger" isInline title={deleteError} />}
          </ModalBody>
          <ModalFooter>
            <Button
              variant="danger"
              data-test="delete-confirm"
              onClick={async () => {
                try {
                  await remove(paths.policies, dialog.name);
                  setDeleteError('');
                  setDialog(undefined);
                  if (route.name === dialog.name) go({ page: 'policies', name: '' });
                } catch (e) {
                  setDeleteError(e instanceof Error ? e.message : String(e));
                }
              }}
            >
              Delete
            </Button>
            <Button variant="link" onClick={() => setDialog(undefined)}>
              Cancel
            </Button>
          </ModalFooter>
        </Modal>
      )}
    </PageSection>
  );
}
